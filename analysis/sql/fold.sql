-- Folds time onto a period: each request gets period_no (which period) and slot (which bucket of
-- the period). Parameters: period_s, bucket_s, origin_s (the instant periods start from: a
-- Monday 00:00 UTC for weeks, the epoch otherwise), lat_metric ('ttft', 'e2e' or 'itl': the
-- latency of `fold_cells`, the report's heatmap).
-- The fold reads fold_t (a replay's recorded ts_start when its recording is known); t stays the
-- time the request ran, which engine_windows.sql matches against engine_metrics.
CREATE OR REPLACE TEMP VIEW folded AS
SELECT
    t,
    floor((epoch(fold_t) - getvariable('origin_s')) / getvariable('period_s'))::BIGINT AS period_no,
    floor(((epoch(fold_t) - getvariable('origin_s'))
        - floor((epoch(fold_t) - getvariable('origin_s')) / getvariable('period_s')) * getvariable('period_s'))
        / getvariable('bucket_s'))::INTEGER AS slot,
    coalesce(ttft_ms, e2e_ms) AS ttft,  -- a request not streamed: its first byte was the answer
    e2e_ms AS e2e,
    tpot_mean_ms AS itl,
    CASE getvariable('lat_metric') WHEN 'ttft' THEN coalesce(ttft_ms, e2e_ms) WHEN 'itl' THEN tpot_mean_ms ELSE e2e_ms END AS lat_ms,
    prompt_len,
    failed,
    coalesce(client_id, route, '(unknown)') AS who
FROM lat;

-- One row per (period, slot) cell: requests, TP99 of each latency over the successful ones, mean
-- prompt. A cell of at most exact_max values per metric gets quantile_cont's exact TP99; a larger
-- one gets it from its latency sketch (analysis/sketch.py; parameters sketch_gamma, exact_max;
-- the same bins as summary.sql), a count per bin ranked like quantile_cont. Two passes (the
-- cells' counts, then the values), and no pass keeps the values of a large cell.
CREATE OR REPLACE TEMP TABLE fold_sizes AS
SELECT
    period_no,
    slot,
    count(*) AS n,
    count(ttft) FILTER (WHERE NOT failed) AS n_ttft,
    count(e2e) FILTER (WHERE NOT failed) AS n_e2e,
    count(itl) FILTER (WHERE NOT failed) AS n_itl,
    avg(prompt_len) AS mean_prompt
FROM folded
GROUP BY period_no, slot;

CREATE OR REPLACE TEMP TABLE fold_cells_m AS
WITH metrics AS (
    SELECT * FROM (VALUES ('ttft'), ('e2e'), ('itl')) m(metric)
),
vals AS (
    SELECT period_no, slot, metric, exact, v,
        CASE WHEN v = 0 THEN 0.0
            ELSE sign(v) * 2 * pow(getvariable('sketch_gamma'), ceil(ln(abs(v)) / ln(getvariable('sketch_gamma'))))
                / (getvariable('sketch_gamma') + 1)
        END AS sv
    FROM (
        SELECT f.period_no, f.slot, m.metric,
            CASE m.metric WHEN 'ttft' THEN f.ttft WHEN 'e2e' THEN f.e2e ELSE f.itl END AS v,
            CASE m.metric WHEN 'ttft' THEN s.n_ttft WHEN 'e2e' THEN s.n_e2e ELSE s.n_itl END <= getvariable('exact_max') AS exact
        FROM folded f
        JOIN fold_sizes s ON s.period_no = f.period_no AND s.slot = f.slot
        CROSS JOIN metrics m
        WHERE NOT f.failed
    ) x
    WHERE v IS NOT NULL
),
-- Per cell and metric: a small cell's exact TP99 (key NULL), a large one's count per bin.
hist AS (
    SELECT period_no, slot, metric, CASE WHEN exact THEN NULL ELSE sv END AS v, count(*) AS c,
        quantile_cont(v, 0.99) FILTER (WHERE exact) AS exact_tp99
    FROM vals
    GROUP BY period_no, slot, metric, CASE WHEN exact THEN NULL ELSE sv END
),
ranked AS (
    SELECT
        *,
        sum(c) OVER (PARTITION BY period_no, slot, metric ORDER BY v ROWS UNBOUNDED PRECEDING) - c AS below,
        sum(c) OVER (PARTITION BY period_no, slot, metric) AS cnt
    FROM hist
    WHERE v IS NOT NULL
),
tp AS (
    SELECT period_no, slot, metric, lo + d * (hi - lo) AS tp99
    FROM (
        SELECT period_no, slot, metric,
            max(v) FILTER (WHERE below <= floor((cnt - 1) * 0.99)) AS lo,
            max(v) FILTER (WHERE below <= ceil((cnt - 1) * 0.99)) AS hi,
            (cnt - 1) * 0.99 - floor((cnt - 1) * 0.99) AS d
        FROM ranked
        GROUP BY period_no, slot, metric, cnt
    ) r
    UNION ALL
    SELECT period_no, slot, metric, exact_tp99 FROM hist WHERE v IS NULL
)
SELECT
    s.period_no,
    s.slot,
    s.n,
    max(tp.tp99) FILTER (WHERE tp.metric = 'ttft') AS ttft_tp99,
    max(tp.tp99) FILTER (WHERE tp.metric = 'e2e') AS e2e_tp99,
    max(tp.tp99) FILTER (WHERE tp.metric = 'itl') AS itl_tp99,
    s.mean_prompt,
    bool_or(s.n_ttft > getvariable('exact_max') OR s.n_e2e > getvariable('exact_max') OR s.n_itl > getvariable('exact_max')) AS sketched
FROM fold_sizes s
LEFT JOIN tp ON tp.period_no = s.period_no AND tp.slot = s.slot
GROUP BY s.period_no, s.slot, s.n, s.mean_prompt;

CREATE OR REPLACE TEMP VIEW fold_cells AS
SELECT
    period_no, slot, n,
    CASE getvariable('lat_metric') WHEN 'ttft' THEN ttft_tp99 WHEN 'itl' THEN itl_tp99 ELSE e2e_tp99 END AS tp99,
    mean_prompt
FROM fold_cells_m;

SELECT count(*) AS cells, count(DISTINCT period_no) AS periods, count(DISTINCT slot) AS slots,
    coalesce(bool_or(sketched), false) AS sketched
FROM fold_cells_m;
