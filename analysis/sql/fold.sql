-- Folds time onto a period: each request gets period_no (which period) and slot (which bucket of
-- the period). Parameters: period_s, bucket_s, origin_s (the instant periods start from: a
-- Monday 00:00 UTC for weeks, the epoch otherwise), lat_metric ('e2e' or 'ttft').
-- The fold reads fold_t (a replay's recorded ts_start when its recording is known); t stays the
-- time the request ran, which engine_windows.sql matches against engine_metrics.
CREATE OR REPLACE TEMP VIEW folded AS
SELECT
    t,
    floor((epoch(fold_t) - getvariable('origin_s')) / getvariable('period_s'))::BIGINT AS period_no,
    floor(((epoch(fold_t) - getvariable('origin_s'))
        - floor((epoch(fold_t) - getvariable('origin_s')) / getvariable('period_s')) * getvariable('period_s'))
        / getvariable('bucket_s'))::INTEGER AS slot,
    CASE WHEN getvariable('lat_metric') = 'ttft' THEN coalesce(ttft_ms, e2e_ms) ELSE e2e_ms END AS lat_ms,
    prompt_len,
    failed,
    coalesce(client_id, route, '(unknown)') AS who
FROM lat;

-- One row per (period, slot) cell: requests, TP99 latency of the successful ones, mean prompt.
CREATE OR REPLACE TEMP TABLE fold_cells AS
SELECT
    period_no,
    slot,
    count(*) AS n,
    quantile_cont(lat_ms, 0.99) FILTER (WHERE NOT failed) AS tp99,
    avg(prompt_len) AS mean_prompt
FROM folded
GROUP BY period_no, slot;

SELECT count(*) AS cells, count(DISTINCT period_no) AS periods, count(DISTINCT slot) AS slots FROM fold_cells;
