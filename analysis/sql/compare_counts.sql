-- Counts behind the proportions of `compare` (error rate, goodput share) and output tokens per
-- second, per run, slot, client, model and --where subset (summed into groups by analysis/compare.py;
-- a group's span is from its first start to its last end). Needs compare_lat.sql first.
-- Parameter: cmp_bucket_s.
SELECT
    run,
    floor(rel_s / getvariable('cmp_bucket_s'))::INTEGER AS slot,
    client,
    model,
    in_subset,
    count(*) AS requests,
    count(*) FILTER (WHERE failed) AS failed,
    count(*) FILTER (WHERE good) AS good,
    coalesce(sum(completion_tokens) FILTER (WHERE NOT failed), 0) AS tokens,
    min(t_s) AS t_first,
    max(t_end_s) AS t_last
FROM cmp_lat
GROUP BY ALL;
