-- Counts behind the proportions of `compare` (error rate, goodput share) and output tokens per
-- second, per group (as compare_bins.sql) and run. Needs compare_lat.sql first.
SELECT
    CASE WHEN grouping(slot) = 0 THEN 'slot' WHEN grouping(client) = 0 THEN 'client'
         WHEN grouping(in_subset) = 0 THEN 'subset' ELSE 'all' END AS grp,
    coalesce(slot::VARCHAR, client, '') AS grp_key,
    run,
    count(*) AS requests,
    count(*) FILTER (WHERE failed) AS failed,
    count(*) FILTER (WHERE good) AS good,
    sum(completion_tokens) FILTER (WHERE NOT failed) AS tokens,
    greatest(max(t_end_s) - min(t_s), 1e-3) AS span_s
FROM cmp_lat
GROUP BY GROUPING SETS ((run), (slot, run), (client, run), (in_subset, run))
HAVING grouping(in_subset) = 1 OR in_subset;
