-- The reported slots, once analysis/anomalies.py has chosen them (temp table fold_accepted: slot,
-- metric). Needs anomalies.sql first. `fold_flags` marks the cells that made a slot (raised on an
-- accepted metric), for anomaly_clients.sql and engine_slots.sql.
CREATE OR REPLACE TEMP TABLE fold_flags AS
SELECT period_no, slot, any_value(typ_prompt) AS typ_prompt, bool_or(anomalous AND a.slot IS NOT NULL) AS anomalous
FROM fold_judged j
LEFT JOIN fold_accepted a USING (slot, metric)
GROUP BY period_no, slot;

-- One row per reported slot: its accepted metrics (strongest first: the largest median z, the rise
-- furthest beyond that metric's own spread: an ITL rise moves E2E by as large a ratio, but less
-- clearly), the periods any of them was raised in, and the traffic of those cells.
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
    list({'metric': metric, 'tp99_ratio': tp99_ratio, 'z': z, 'chance': a.chance, 'tp99_ms': tp99_ms, 'typical_tp99_ms': typical_tp99_ms,
          'periods_anomalous': periods_anomalous, 'periods_seen': periods_seen, 'anomalous_periods': anomalous_periods}
         ORDER BY z DESC) AS metrics,
    max(z) AS z,
    any_value(c.periods) AS anomalous_periods,
    any_value(c.requests) AS requests,
    any_value(c.mean_prompt) AS mean_prompt,
    any_value(c.typical_prompt) AS typical_prompt,
    any_value(c.prompt_ratio) AS prompt_ratio
FROM fold_slot_metrics m
JOIN fold_accepted a USING (slot, metric)
JOIN cells c USING (slot)
GROUP BY m.slot
ORDER BY z DESC;
