-- Latency percentiles and mean prompt length over time, per ts_bucket_s seconds.
SELECT
    floor(epoch(t) / getvariable('ts_bucket_s')) * getvariable('ts_bucket_s') AS bucket_s,
    count(*) AS requests,
    avg(failed::INT) AS error_rate,
    quantile_cont(e2e_ms, [0.5, 0.95, 0.99]) FILTER (WHERE NOT failed) AS e2e_q,
    quantile_cont(ttft_ms, [0.5, 0.95, 0.99]) FILTER (WHERE NOT failed) AS ttft_q,
    avg(prompt_len) AS mean_prompt
FROM lat
GROUP BY 1
ORDER BY 1;
