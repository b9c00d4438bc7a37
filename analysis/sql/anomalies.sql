-- Which cells of the fold are raised, and which slots are raised period after period.
-- Needs fold.sql first. Parameters:
--   metrics          the latencies judged, e.g. ['ttft', 'e2e', 'itl']
--   tp99_ratio_min   a cell is raised when its TP99 / the median cell's >= this (e.g. 1.5) ...
--   raised_z_min     ... and the robust z-score of its log TP99 >= this (1): its distance from the
--                    median cell in units of 1.4826 x the median absolute deviation (MAD)
--   prompt_ratio_min NULL, or also require mean prompt / the median cell's >= this
--   min_requests     cells with fewer requests are not judged
--   min_periods      periods a slot must be raised in (e.g. 2)
--   min_share        ...and the share of the periods it was judged in (e.g. 0.5)
-- The MAD is floored at 0.05 (5 % in TP99), so a fold of near-identical cells does not turn a
-- 5 % rise into a large z. The last statement lists the candidate slots per metric with the
-- counts behind their significance (analysis/anomalies.py decides; anomaly_slots.sql reports).
CREATE OR REPLACE TEMP TABLE fold_judged AS
WITH cells AS (
    SELECT period_no, slot, n, mean_prompt, 'ttft' AS metric, ttft_tp99 AS tp99 FROM fold_cells_m
    UNION ALL
    SELECT period_no, slot, n, mean_prompt, 'e2e', e2e_tp99 FROM fold_cells_m
    UNION ALL
    SELECT period_no, slot, n, mean_prompt, 'itl', itl_tp99 FROM fold_cells_m
),
judged AS (
    SELECT * FROM cells
    WHERE n >= getvariable('min_requests') AND tp99 > 0 AND list_contains(getvariable('metrics'), metric)
),
med AS (
    SELECT metric, median(ln(tp99)) AS m FROM judged GROUP BY metric
),
ref AS (
    SELECT metric, any_value(m) AS m, greatest(1.4826 * median(abs(ln(tp99) - m)), 0.05) AS s
    FROM judged JOIN med USING (metric)
    GROUP BY metric
),
prompt_ref AS (
    SELECT median(mean_prompt) AS typ_prompt FROM fold_cells_m WHERE n >= getvariable('min_requests')
)
SELECT
    j.*,
    exp(ref.m) AS typ_tp99,
    (ln(tp99) - ref.m) / ref.s AS z,
    tp99 / exp(ref.m) AS ratio,
    typ_prompt,
    mean_prompt / typ_prompt AS prompt_ratio,
    coalesce(
        (ln(tp99) - ref.m) / ref.s >= getvariable('raised_z_min')
        AND tp99 / exp(ref.m) >= getvariable('tp99_ratio_min')
        AND (getvariable('prompt_ratio_min') IS NULL OR mean_prompt / typ_prompt >= getvariable('prompt_ratio_min')),
        false) AS anomalous
FROM judged j
JOIN ref USING (metric), prompt_ref;

-- Per slot and metric: how often and how strongly it was raised; only those raised often enough.
CREATE OR REPLACE TEMP TABLE fold_slot_metrics AS
SELECT
    slot,
    metric,
    count(*) AS periods_seen,
    count(*) FILTER (WHERE anomalous) AS periods_anomalous,
    median(ratio) FILTER (WHERE anomalous) AS tp99_ratio,
    median(z) FILTER (WHERE anomalous) AS z,
    median(tp99) FILTER (WHERE anomalous) AS tp99_ms,
    any_value(typ_tp99) AS typical_tp99_ms,
    list(period_no ORDER BY period_no) FILTER (WHERE anomalous) AS anomalous_periods
FROM fold_judged
GROUP BY slot, metric
HAVING count(*) FILTER (WHERE anomalous) >= getvariable('min_periods')
   AND count(*) FILTER (WHERE anomalous) >= getvariable('min_share') * count(*);

SELECT
    m.*,
    t.cells AS metric_cells,
    t.raised AS metric_raised,
    (SELECT count(DISTINCT slot) FROM fold_judged) * (SELECT count(DISTINCT metric) FROM fold_judged) AS tests
FROM fold_slot_metrics m
JOIN (SELECT metric, count(*) AS cells, count(*) FILTER (WHERE anomalous) AS raised FROM fold_judged GROUP BY metric) t USING (metric)
ORDER BY slot, metric;
