-- Latency histograms for the bootstrap of `compare` (analysis/stats.py): per run, slot, client,
-- model, --where subset and metric, the requests in each bin of a logarithmic grid. analysis/compare.py
-- sums them into the groups it reports (the whole run, each slot, client and model, the subset).
-- Needs compare_lat.sql first. Parameters: cmp_bucket_s; log_step, ln(1 + relative bin width):
-- a bin's value is exp(bin * log_step).
WITH v AS (
    SELECT run, rel_s, client, model, in_subset, 'ttft' AS metric, ttft_ms AS ms FROM cmp_lat WHERE ttft_ms IS NOT NULL
    UNION ALL
    SELECT run, rel_s, client, model, in_subset, 'e2e', e2e_ms FROM cmp_lat WHERE e2e_ms IS NOT NULL
    UNION ALL
    SELECT run, rel_s, client, model, in_subset, 'itl', tpot_ms FROM cmp_lat WHERE tpot_ms IS NOT NULL
)
SELECT
    run,
    floor(rel_s / getvariable('cmp_bucket_s'))::INTEGER AS slot,
    client,
    model,
    in_subset,
    metric,
    round(ln(greatest(ms, 1e-3)) / getvariable('log_step'))::BIGINT AS bin,
    count(*) AS n
FROM v
GROUP BY ALL;
