-- The replay candidates: the recording's requests between $start (inclusive) and $end (exclusive).
-- $files is the validated list of Parquet files. replayer/schedule.py then applies the user's
-- --where predicate and --route rules as DuckDB expressions (the relational API, not pasted into
-- this text), keeps the columns the replayer reads, orders by send time and applies --limit.
SELECT *
FROM read_parquet($files, hive_partitioning = true, union_by_name = true)
WHERE ts_start >= $start
  AND ts_start < $end
