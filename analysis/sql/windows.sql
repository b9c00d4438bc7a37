-- Windowed SLO compliance: the share of windows (window_s seconds, by request start) whose P95
-- of each SLO metric met its SLO. A failed request counts as infinitely slow.
-- Parameters: window_s, slo_ttft_ms, slo_e2e_ms, slo_itl_ms.
WITH w AS (
    SELECT
        grouping(kind, model, client_id) = 7 AS is_total,
        kind,
        model,
        client_id,
        floor(epoch(t) / getvariable('window_s')) AS win,
        quantile_cont(CASE WHEN failed THEN 'inf'::DOUBLE ELSE coalesce(ttft_ms, e2e_ms) END, 0.95) AS p95_ttft,
        quantile_cont(CASE WHEN failed THEN 'inf'::DOUBLE ELSE e2e_ms END, 0.95) AS p95_e2e,
        quantile_cont(CASE WHEN failed THEN 'inf'::DOUBLE ELSE tpot_ms END, 0.95) AS p95_itl
    FROM lat
    GROUP BY GROUPING SETS ((kind, model, client_id, win), (win))
)
SELECT
    is_total,
    kind,
    model,
    client_id,
    count(*) AS windows,
    avg(coalesce(
        (getvariable('slo_ttft_ms') IS NULL OR p95_ttft <= getvariable('slo_ttft_ms'))
        AND (getvariable('slo_e2e_ms') IS NULL OR p95_e2e <= getvariable('slo_e2e_ms'))
        AND (getvariable('slo_itl_ms') IS NULL OR p95_itl <= getvariable('slo_itl_ms')),
        false)::INT) AS compliance
FROM w
GROUP BY ALL;
