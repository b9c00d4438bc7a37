-- The columns the recording's Parquet files hold (absent optional ones are read as typed NULLs).
DESCRIBE SELECT * FROM read_parquet($files, hive_partitioning = true, union_by_name = true)
