-- Per relative time slot (cmp_bucket_s seconds from the run's first request): requests, TTFT and
-- e2e percentiles, error rate and the share meeting every SLO (slo_*_ms as in summary.sql).
WITH s AS (SELECT min(epoch(t)) AS t0 FROM lat)
SELECT
    floor((epoch(t) - t0) / getvariable('cmp_bucket_s'))::INTEGER AS slot,
    count(*) AS requests,
    avg(failed::INT) AS error_rate,
    quantile_cont(ttft_ms, [0.5, 0.99]) AS ttft_q,
    quantile_cont(e2e_ms, [0.5, 0.99]) AS e2e_q,
    avg(coalesce(
        NOT failed
        AND (getvariable('slo_ttft_ms') IS NULL OR coalesce(ttft_ms, e2e_ms) <= getvariable('slo_ttft_ms'))
        AND (getvariable('slo_e2e_ms') IS NULL OR e2e_ms <= getvariable('slo_e2e_ms'))
        AND (getvariable('slo_itl_ms') IS NULL OR tpot_ms <= getvariable('slo_itl_ms')),
        false)::INT) AS goodput_share
FROM lat, s
GROUP BY slot
ORDER BY slot;
