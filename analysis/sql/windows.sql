-- Windowed SLO compliance: the share of windows (window_s seconds, by request start) whose P95
-- met every SLO set. "P95 met" means at least 95% of the window's requests met it (the P95 by
-- nearest rank is within the SLO); a failed request never meets it. Counting instead of a
-- per-window quantile keeps this one cheap pass over ten million rows.
-- Parameters: window_s, slo_ttft_ms, slo_e2e_ms, slo_itl_ms.
WITH w AS (
    SELECT
        grouping(kind, model, client_id) = 7 AS is_total,
        kind,
        model,
        client_id,
        floor(epoch(t) / getvariable('window_s')) AS win,
        count(*) AS n,
        count(*) FILTER (WHERE NOT failed AND coalesce(ttft_ms, e2e_ms) <= getvariable('slo_ttft_ms')) AS ok_ttft,
        count(*) FILTER (WHERE NOT failed AND e2e_ms <= getvariable('slo_e2e_ms')) AS ok_e2e,
        count(*) FILTER (WHERE NOT failed AND tpot_ms <= getvariable('slo_itl_ms')) AS ok_itl
    FROM lat
    GROUP BY GROUPING SETS ((kind, model, client_id, win), (win))
)
SELECT
    is_total,
    kind,
    model,
    client_id,
    count(*) AS windows,
    avg((
        (getvariable('slo_ttft_ms') IS NULL OR 100 * ok_ttft >= 95 * n)
        AND (getvariable('slo_e2e_ms') IS NULL OR 100 * ok_e2e >= 95 * n)
        AND (getvariable('slo_itl_ms') IS NULL OR 100 * ok_itl >= 95 * n))::INT) AS compliance
FROM w
GROUP BY ALL;
