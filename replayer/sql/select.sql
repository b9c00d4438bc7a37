-- The replay selection: the recording's requests in send order.
-- Filled in by replayer/schedule.py: {columns} (the columns the replayer reads, NULL for absent
-- optional ones), {where} (the user's --where predicate, default TRUE), {route} (a CASE over the
-- --route predicates giving the index of the first rule that matches, NULL for the default target)
-- and {limit}. $files is the validated list of Parquet files; $start/$end bound ts_start.
SELECT {columns}, {route} AS route_index
FROM read_parquet($files, hive_partitioning = true, union_by_name = true)
WHERE ({where})
  AND ts_start >= $start
  AND ts_start < $end
ORDER BY ts_start, request_id
{limit}
