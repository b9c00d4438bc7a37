-- Per kind/model/client and overall: counts, error/timeout rates, TTFT / e2e / per-request ITL
-- percentiles, output tokens/s and goodput.
-- Parameters (SET VARIABLE name = value; NULL or unset = no such SLO):
--   slo_ttft_ms, slo_e2e_ms, slo_itl_ms
-- A request is good when it did not fail and meets every SLO set. A request without a TTFT
-- (not streamed) is judged on its e2e latency for the TTFT SLO: its first byte was the answer.
WITH span AS (
    SELECT greatest(max(epoch(t) + coalesce(e2e_ms, 0) / 1000.0) - min(epoch(t)), 1e-3) AS span_s
    FROM lat
),
base AS (
    SELECT
        *,
        coalesce(
            NOT failed
            AND (getvariable('slo_ttft_ms') IS NULL OR coalesce(ttft_ms, e2e_ms) <= getvariable('slo_ttft_ms'))
            AND (getvariable('slo_e2e_ms') IS NULL OR e2e_ms <= getvariable('slo_e2e_ms'))
            AND (getvariable('slo_itl_ms') IS NULL OR tpot_ms <= getvariable('slo_itl_ms')),
            false) AS good
    FROM lat
)
SELECT
    grouping(group_key) = 1 AS is_total,
    CASE WHEN grouping(group_key) = 0 THEN any_value(kind) END AS kind,
    CASE WHEN grouping(group_key) = 0 THEN any_value(model) END AS model,
    CASE WHEN grouping(group_key) = 0 THEN any_value(client_id) END AS client_id,
    count(*) AS requests,
    avg(failed::INT) AS error_rate,
    avg(timed_out::INT) AS timeout_rate,
    count(ttft_ms) AS with_ttft,
    quantile_cont(ttft_ms, [0.5, 0.95, 0.99]) AS ttft_q,
    max(ttft_ms) AS ttft_max,
    quantile_cont(e2e_ms, [0.5, 0.95, 0.99]) AS e2e_q,
    max(e2e_ms) AS e2e_max,
    quantile_cont(tpot_ms, [0.5, 0.95, 0.99]) AS tpot_q,
    max(tpot_ms) AS tpot_max,
    quantile_cont(prompt_len, [0.5, 0.99]) AS prompt_q,
    quantile_cont(completion_tokens, [0.5, 0.99]) AS completion_q,
    sum(completion_tokens) FILTER (WHERE NOT failed) / any_value(span_s) AS tokens_per_s,
    count(*) FILTER (WHERE good) AS good,
    count(*) FILTER (WHERE good) / any_value(span_s) AS goodput_rps,
    avg(good::INT) AS goodput_share,
    count(*) / any_value(span_s) AS rps,
    any_value(span_s) AS span_s
FROM base, span
GROUP BY GROUPING SETS ((group_key), ())
ORDER BY is_total DESC, requests DESC;
