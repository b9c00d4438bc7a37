-- Slots whose TP99 stands out from the other cells of the fold, period after period.
-- Needs fold.sql first. Parameters:
--   metrics          the latencies judged, e.g. ['ttft', 'e2e', 'itl']
--   min_z            robust z-score a cell's log TP99 needs (e.g. 3.5): its distance from the
--                    median cell in units of 1.4826 x the median absolute deviation (MAD)
--   tp99_ratio_min   ...and its TP99 / the median cell's (e.g. 1.5)
--   prompt_ratio_min NULL, or also require mean prompt / the median cell's >= this
--   min_requests     cells with fewer requests are not judged
--   min_periods      periods a slot must be anomalous in (e.g. 2)
--   min_share        ...and the share of the periods it was judged in (e.g. 0.5)
-- The MAD is floored at 0.05 (5 % in TP99), so a fold of near-identical cells does not turn a
-- 5 % rise into a large z. A slot is reported when one of its metrics passes; `fold_flags`
-- marks the cells that made it (for anomaly_clients.sql and engine_slots.sql).
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
        (ln(tp99) - ref.m) / ref.s >= getvariable('min_z')
        AND tp99 / exp(ref.m) >= getvariable('tp99_ratio_min')
        AND (getvariable('prompt_ratio_min') IS NULL OR mean_prompt / typ_prompt >= getvariable('prompt_ratio_min')),
        false) AS anomalous
FROM judged j
JOIN ref USING (metric), prompt_ref;

-- Per slot and metric: how often and how strongly it stood out; only those that pass.
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

CREATE OR REPLACE TEMP TABLE fold_flags AS
SELECT period_no, slot, any_value(typ_prompt) AS typ_prompt, bool_or(anomalous AND s.slot IS NOT NULL) AS anomalous
FROM fold_judged j
LEFT JOIN fold_slot_metrics s USING (slot, metric)
GROUP BY period_no, slot;

-- One row per reported slot: its metrics (strongest first: the largest z, the rise furthest beyond
-- that metric's own spread: an ITL rise moves E2E by as large a ratio, but less clearly), the periods
-- any of them stood out in, and the traffic of those cells.
WITH cells AS (
    SELECT slot, list(period_no ORDER BY period_no) AS periods, sum(c.n) AS requests,
        median(c.mean_prompt) AS mean_prompt, any_value(f.typ_prompt) AS typical_prompt,
        median(c.mean_prompt) / any_value(f.typ_prompt) AS prompt_ratio
    FROM fold_flags f JOIN fold_cells_m c USING (period_no, slot)
    WHERE f.anomalous
    GROUP BY slot
)
SELECT
    m.slot,
    list({'metric': metric, 'tp99_ratio': tp99_ratio, 'z': z, 'tp99_ms': tp99_ms, 'typical_tp99_ms': typical_tp99_ms,
          'periods_anomalous': periods_anomalous, 'periods_seen': periods_seen, 'anomalous_periods': anomalous_periods}
         ORDER BY z DESC) AS metrics,
    max(z) AS z,
    any_value(c.periods) AS anomalous_periods,
    any_value(c.requests) AS requests,
    any_value(c.mean_prompt) AS mean_prompt,
    any_value(c.typical_prompt) AS typical_prompt,
    any_value(c.prompt_ratio) AS prompt_ratio
FROM fold_slot_metrics m
JOIN cells c USING (slot)
GROUP BY m.slot
ORDER BY z DESC;
