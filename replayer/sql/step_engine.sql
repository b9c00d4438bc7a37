-- The engine's queue during one capacity step: peak and mean of the requests running and waiting,
-- from the step's engine_metrics (sampled from the target's /metrics while it ran).
SELECT metric, max(value) AS peak, avg(value) AS mean
FROM read_parquet($files, hive_partitioning = true, union_by_name = true)
WHERE metric IN ('vllm:num_requests_running', 'vllm:num_requests_waiting')
GROUP BY metric
ORDER BY metric
