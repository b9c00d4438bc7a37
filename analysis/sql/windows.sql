-- Windowed SLO compliance: the share of windows (window_s seconds, by request start) whose P95
-- met every SLO set. "P95 met" means at least 95% of the window's requests met it (the P95 by
-- nearest rank is within the SLO); a failed request never meets it. Counting instead of a
-- per-window quantile keeps this one cheap pass over ten million rows, and counts add up, so the
-- all-traffic windows are summed from the per-group ones.
-- Parameters: window_s, slo_ttft_ms, slo_e2e_ms, slo_itl_ms.
WITH g AS (
    SELECT
        group_key,
        floor(epoch(t) / getvariable('window_s'))::BIGINT AS win,
        count(*) AS n,
        count(*) FILTER (WHERE NOT failed AND coalesce(ttft_ms, e2e_ms) <= getvariable('slo_ttft_ms')) AS ok_ttft,
        count(*) FILTER (WHERE NOT failed AND e2e_ms <= getvariable('slo_e2e_ms')) AS ok_e2e,
        count(*) FILTER (WHERE NOT failed AND tpot_ms <= getvariable('slo_itl_ms')) AS ok_itl
    FROM lat
    GROUP BY ALL
),
w AS (
    SELECT false AS is_total, * FROM g
    UNION ALL
    SELECT true, NULL, win, sum(n), sum(ok_ttft), sum(ok_e2e), sum(ok_itl) FROM g GROUP BY win
),
names AS (
    SELECT group_key, any_value(kind) AS kind, any_value(model) AS model, any_value(client_id) AS client_id
    FROM lat
    GROUP BY group_key
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
LEFT JOIN names USING (group_key)
GROUP BY is_total, group_key, kind, model, client_id;
