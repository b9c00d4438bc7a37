-- Short requests (every client but the batch client) of the recording, inside and outside the
-- anomalous slot. The slot is judged on the recording's time: ts_start folded onto the period.
-- Parameters: $glob (requests Parquet glob), $period_s, $slot_from_s, $slot_to_s, $batch_client.
WITH r AS (
    SELECT ttft_ms, e2e_ms, (error IS NOT NULL OR coalesce(status, 0) >= 400) AS failed,
           (epoch(ts_start) % $period_s) BETWEEN $slot_from_s AND $slot_to_s - 1e-6 AS in_slot
    FROM read_parquet($glob, hive_partitioning = true)
    WHERE client_id IS DISTINCT FROM $batch_client
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
