-- Requests to export, in time order: microsecond timestamps, lengths, kept hash_ids and bodies.
-- $glob is the requests table's checked Parquet files; traces/export.py fills in the marker after the star
-- with a typed NULL for each documented column no file has (files from other tools).
SELECT
    request_id,
    kind,
    epoch_us(ts_start) AS ts_us,
    prompt_tokens,
    coalesce(completion_tokens, max_tokens) AS output_tokens,
    hash_ids,
    request_body
FROM (SELECT * :absent FROM read_parquet($glob, hive_partitioning = true, union_by_name = true))
-- ties keep import order: our ids end in the source row number, so shorter ids sort first
ORDER BY ts_start, length(request_id), request_id
