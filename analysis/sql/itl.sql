-- Inter-token latency percentiles over every token gap (itl_ms lists), per kind/model/client
-- and overall. Requests without itl_ms lists are left out (see tpot in summary.sql).
SELECT
    grouping(group_key) = 1 AS is_total,
    CASE WHEN grouping(group_key) = 0 THEN any_value(kind) END AS kind,
    CASE WHEN grouping(group_key) = 0 THEN any_value(model) END AS model,
    CASE WHEN grouping(group_key) = 0 THEN any_value(client_id) END AS client_id,
    count(*) AS gaps,
    quantile_cont(gap, [0.5, 0.95, 0.99]) AS itl_q,
    max(gap) AS itl_max
FROM (SELECT group_key, kind, model, client_id, unnest(itl_ms) AS gap FROM lat WHERE NOT failed AND itl_ms IS NOT NULL)
GROUP BY GROUPING SETS ((group_key), ());
