-- Rows of the requests table ($glob: its checked files) without hash_ids (0: every row has its own, kept as they are).
SELECT count(*) FILTER (WHERE hash_ids IS NULL OR len(hash_ids) = 0) AS missing
FROM read_parquet($glob, hive_partitioning = true, union_by_name = true)
