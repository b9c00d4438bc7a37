-- Inter-token latency percentiles over every token gap (itl_ms lists), per kind/model/client
-- and overall. Requests without itl_ms lists are left out (see tpot in summary.sql).
SELECT
    grouping(kind, model, client_id) = 7 AS is_total,
    kind,
    model,
    client_id,
    count(*) AS gaps,
    quantile_cont(gap, [0.5, 0.95, 0.99]) AS itl_q,
    max(gap) AS itl_max
FROM (SELECT kind, model, client_id, unnest(itl_ms) AS gap FROM lat WHERE NOT failed AND itl_ms IS NOT NULL)
GROUP BY GROUPING SETS ((kind, model, client_id), ());
