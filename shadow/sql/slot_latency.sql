-- Short requests (every client but the batch client) inside and outside the anomalous slot, of a
-- recording ($glob = its requests glob) or of a replay ($glob = its replay_results glob). The slot
-- is judged on the recorded time: joined to the recording by request_id, so a replay that ran at
-- another wall-clock phase or speed is still split on its recording's slots.
-- Parameters: $glob, $rec_glob (the recording's requests glob), $period_s, $slot_from_s,
-- $slot_to_s, $batch_client.
WITH q AS (
    SELECT request_id, client_id, ts_start FROM read_parquet($rec_glob, hive_partitioning = true)
),
r AS (
    SELECT x.ttft_ms, x.e2e_ms, (x.error IS NOT NULL OR coalesce(x.status, 0) >= 400) AS failed,
           (epoch(q.ts_start) % $period_s) BETWEEN $slot_from_s AND $slot_to_s - 1e-6 AS in_slot
    FROM read_parquet($glob, hive_partitioning = true) AS x
    JOIN q USING (request_id)
    WHERE q.client_id IS DISTINCT FROM $batch_client
)
SELECT in_slot,
       count(*) AS requests,
       count(*) FILTER (WHERE failed) AS failed,
       quantile_cont(ttft_ms, 0.5) AS ttft_p50_ms,
       quantile_cont(ttft_ms, 0.99) AS ttft_p99_ms,
       quantile_cont(e2e_ms, 0.5) AS e2e_p50_ms,
       quantile_cont(e2e_ms, 0.99) AS e2e_p99_ms
FROM r
GROUP BY in_slot
ORDER BY in_slot;
