-- Latency histograms for the bootstrap of `compare` (analysis/stats.py): for each group (the
-- whole run, each slot, each client, the --where subset), run and metric, the requests in each
-- bin of a logarithmic grid. Needs compare_lat.sql first. Parameter: log_step, ln(1 + relative
-- bin width); a bin's value is exp(bin * log_step).
WITH v AS (
    SELECT run, slot, client, in_subset, 'ttft' AS metric, ttft_ms AS ms FROM cmp_lat WHERE ttft_ms IS NOT NULL
    UNION ALL
    SELECT run, slot, client, in_subset, 'e2e', e2e_ms FROM cmp_lat WHERE e2e_ms IS NOT NULL
    UNION ALL
    SELECT run, slot, client, in_subset, 'itl', tpot_ms FROM cmp_lat WHERE tpot_ms IS NOT NULL
),
b AS (
    SELECT *, round(ln(greatest(ms, 1e-3)) / getvariable('log_step'))::BIGINT AS bin FROM v
)
SELECT
    CASE WHEN grouping(slot) = 0 THEN 'slot' WHEN grouping(client) = 0 THEN 'client'
         WHEN grouping(in_subset) = 0 THEN 'subset' ELSE 'all' END AS grp,
    coalesce(slot::VARCHAR, client, '') AS grp_key,
    metric,
    run,
    bin,
    count(*) AS n
FROM b
GROUP BY GROUPING SETS ((metric, run, bin), (slot, metric, run, bin), (client, metric, run, bin), (in_subset, metric, run, bin))
HAVING grouping(in_subset) = 1 OR in_subset;
