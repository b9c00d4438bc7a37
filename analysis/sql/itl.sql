-- Inter-token latency percentiles over every token gap (itl_ms lists), per kind/model/client
-- and overall. Requests without itl_ms lists are left out (see tpot in summary.sql).
-- Parameters: sketch_gamma, exact_max. The gaps are binned by the latency sketch of
-- analysis/sketch.py exactly as summary.sql bins latencies (exact values in a group of at most
-- exact_max gaps; the overall row merges the groups' histograms), and ranked the same way.
WITH gaps AS (
    SELECT group_key, unnest(itl_ms) AS v FROM lat WHERE NOT failed AND itl_ms IS NOT NULL
),
names AS (
    SELECT group_key, any_value(kind) AS kind, any_value(model) AS model, any_value(client_id) AS client_id
    FROM lat WHERE NOT failed AND itl_ms IS NOT NULL
    GROUP BY group_key
),
sizes AS (
    SELECT group_key, count(*) AS gaps, count(v) AS n, max(v) AS itl_max FROM gaps GROUP BY group_key
),
group_hist AS (
    SELECT group_key, CASE WHEN n <= getvariable('exact_max') THEN v ELSE sv END AS v, sv, count(*) AS c
    FROM (
        SELECT g.group_key, g.v, s.n,
            CASE WHEN g.v = 0 THEN 0.0
                ELSE sign(g.v) * 2 * pow(getvariable('sketch_gamma'), ceil(ln(abs(g.v)) / ln(getvariable('sketch_gamma'))))
                    / (getvariable('sketch_gamma') + 1)
            END AS sv
        FROM gaps g JOIN sizes s ON s.group_key = g.group_key
        WHERE g.v IS NOT NULL
    ) x
    GROUP BY group_key, CASE WHEN n <= getvariable('exact_max') THEN v ELSE sv END, sv
),
total_n AS (
    SELECT sum(n) AS n FROM sizes
),
hist AS (
    SELECT false AS is_total, group_key, v, c FROM group_hist
    UNION ALL
    SELECT true, NULL, CASE WHEN t.n <= getvariable('exact_max') THEN h.v ELSE h.sv END, sum(h.c)
    FROM group_hist h, total_n t
    GROUP BY CASE WHEN t.n <= getvariable('exact_max') THEN h.v ELSE h.sv END
),
ranked AS (
    SELECT
        *,
        sum(c) OVER (PARTITION BY is_total, group_key ORDER BY v ROWS UNBOUNDED PRECEDING) - c AS below,
        sum(c) OVER (PARTITION BY is_total, group_key) AS n
    FROM hist
),
at_q AS (
    SELECT is_total, group_key, q, n,
        max(v) FILTER (WHERE below <= floor((n - 1) * q)) AS lo,
        max(v) FILTER (WHERE below <= ceil((n - 1) * q)) AS hi,
        (n - 1) * q - floor((n - 1) * q) AS d
    FROM ranked, (VALUES (0.5), (0.95), (0.99)) qs(q)
    GROUP BY is_total, group_key, q, n
),
pcts AS (
    SELECT is_total, group_key, list(lo + d * (hi - lo) ORDER BY q) AS itl_q, bool_or(n > getvariable('exact_max')) AS sketched
    FROM at_q
    GROUP BY is_total, group_key
),
per_group AS (
    SELECT grouping(group_key) = 1 AS is_total, group_key, sum(gaps) AS gaps, max(itl_max) AS itl_max
    FROM sizes
    GROUP BY GROUPING SETS ((group_key), ())
)
SELECT
    p.is_total,
    n.kind,
    n.model,
    n.client_id,
    p.gaps,
    q.itl_q,
    p.itl_max,
    coalesce(q.sketched, false) AS sketched
FROM per_group p
LEFT JOIN names n ON NOT p.is_total AND n.group_key = p.group_key
LEFT JOIN pcts q ON q.is_total = p.is_total AND q.group_key IS NOT DISTINCT FROM p.group_key;
