-- Engine load next to latency, per window of corr_window_s seconds: mean running (batch size),
-- waiting (queue depth) and KV-cache usage from engine_metrics (summed over engines at each
-- scrape), and the P99 / mean latency of the requests started in the window. Needs fold.sql.
CREATE OR REPLACE TEMP TABLE engine_windows AS
WITH scrape AS (
    SELECT
        ts,
        sum(value) FILTER (WHERE metric = 'vllm:num_requests_running') AS running,
        sum(value) FILTER (WHERE metric = 'vllm:num_requests_waiting') AS waiting,
        avg(value) FILTER (WHERE metric IN ('vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc')) AS kv_usage
    FROM engine_metrics
    WHERE metric IN ('vllm:num_requests_running', 'vllm:num_requests_waiting',
                     'vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc')
    GROUP BY ts
),
m AS (
    SELECT floor(epoch(ts) / getvariable('corr_window_s'))::BIGINT AS win,
           avg(running) AS running, avg(waiting) AS waiting, avg(kv_usage) AS kv_usage
    FROM scrape
    GROUP BY win
),
l AS (
    SELECT floor(epoch(t) / getvariable('corr_window_s'))::BIGINT AS win,
           count(*) AS n,
           quantile_cont(lat_ms, 0.99) AS p99_ms,
           avg(lat_ms) AS mean_ms,
           any_value(period_no) AS period_no,
           any_value(slot) AS slot
    FROM folded
    WHERE NOT failed AND lat_ms IS NOT NULL
    GROUP BY win
)
SELECT * FROM l JOIN m USING (win);

SELECT
    count(*) AS windows,
    corr(p99_ms, running) AS corr_p99_running,
    corr(p99_ms, waiting) AS corr_p99_waiting,
    corr(p99_ms, kv_usage) AS corr_p99_kv,
    corr(mean_ms, running) AS corr_mean_running,
    corr(mean_ms, waiting) AS corr_mean_waiting,
    avg(running) AS mean_running,
    avg(waiting) AS mean_waiting
FROM engine_windows;
