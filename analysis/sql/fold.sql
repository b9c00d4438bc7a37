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
-- prompt.
CREATE OR REPLACE TEMP TABLE fold_cells_m AS
SELECT
    period_no,
    slot,
    count(*) AS n,
    quantile_cont(ttft, 0.99) FILTER (WHERE NOT failed) AS ttft_tp99,
    quantile_cont(e2e, 0.99) FILTER (WHERE NOT failed) AS e2e_tp99,
    quantile_cont(itl, 0.99) FILTER (WHERE NOT failed) AS itl_tp99,
    avg(prompt_len) AS mean_prompt
FROM folded
GROUP BY period_no, slot;

CREATE OR REPLACE TEMP VIEW fold_cells AS
SELECT
    period_no, slot, n,
    CASE getvariable('lat_metric') WHEN 'ttft' THEN ttft_tp99 WHEN 'itl' THEN itl_tp99 ELSE e2e_tp99 END AS tp99,
    mean_prompt
FROM fold_cells_m;

SELECT count(*) AS cells, count(DISTINCT period_no) AS periods, count(DISTINCT slot) AS slots FROM fold_cells_m;
