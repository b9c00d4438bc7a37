-- First and last request of the whole recording and its recorded hosts (for --start/--end offsets
-- and the recorded-host safety check).
SELECT min(ts_start) AS first_ts, max(ts_start) AS last_ts, count(*) AS n
FROM read_parquet($files, hive_partitioning = true, union_by_name = true)
