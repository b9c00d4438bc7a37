-- Per kind/model/client and overall: counts, error/timeout rates, TTFT / e2e / per-request ITL
-- percentiles, output tokens/s and goodput.
-- Parameters (SET VARIABLE name = value; NULL or unset = no such SLO):
--   slo_ttft_ms, slo_e2e_ms, slo_itl_ms
-- A request is good when it did not fail and meets every SLO set. A request without a TTFT
-- (not streamed) is judged on its e2e latency for the TTFT SLO: its first byte was the answer.
-- Prompt and output token percentiles are exact quantile_cont values computed from a histogram
-- (count per distinct value): token counts take few distinct values, so this sorts thousands of
-- values instead of ten million. The value at 0-based rank r is the largest value with fewer than
-- r+1 values below it; between ranks it interpolates like quantile_cont.
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
),
hist AS (
    SELECT 'prompt' AS col, grouping(group_key) = 1 AS is_total, group_key, prompt_len AS v, count(*) AS c
    FROM lat WHERE prompt_len IS NOT NULL
    GROUP BY GROUPING SETS ((group_key, prompt_len), (prompt_len))
    UNION ALL
    SELECT 'completion', grouping(group_key) = 1, group_key, completion_tokens::DOUBLE, count(*)
    FROM lat WHERE completion_tokens IS NOT NULL
    GROUP BY GROUPING SETS ((group_key, completion_tokens), (completion_tokens))
),
ranked AS (
    SELECT
        *,
        sum(c) OVER (PARTITION BY col, is_total, group_key ORDER BY v ROWS UNBOUNDED PRECEDING) - c AS below,
        sum(c) OVER (PARTITION BY col, is_total, group_key) AS n
    FROM hist
),
at_q AS (
    SELECT col, is_total, group_key, q,
        max(v) FILTER (WHERE below <= floor((n - 1) * q)) AS lo,
        max(v) FILTER (WHERE below <= ceil((n - 1) * q)) AS hi,
        (n - 1) * q - floor((n - 1) * q) AS d
    FROM ranked, (VALUES (0.5), (0.99)) qs(q)
    GROUP BY col, is_total, group_key, q, n
),
tokens AS (
    SELECT is_total, group_key,
        list(lo + d * (hi - lo) ORDER BY q) FILTER (WHERE col = 'prompt') AS prompt_q,
        list(lo + d * (hi - lo) ORDER BY q) FILTER (WHERE col = 'completion') AS completion_q
    FROM at_q
    GROUP BY is_total, group_key
),
-- The latency quantiles in an aggregate of their own: cheaper than beside the counts and filters.
lats AS (
    SELECT
        grouping(group_key) = 1 AS is_total,
        group_key,
        quantile_cont(ttft_ms, [0.5, 0.95, 0.99]) AS ttft_q,
        max(ttft_ms) AS ttft_max,
        quantile_cont(e2e_ms, [0.5, 0.95, 0.99]) AS e2e_q,
        max(e2e_ms) AS e2e_max,
        quantile_cont(tpot_ms, [0.5, 0.95, 0.99]) AS tpot_q,
        max(tpot_ms) AS tpot_max
    FROM lat
    GROUP BY GROUPING SETS ((group_key), ())
),
summary AS (
SELECT
    grouping(group_key) = 1 AS is_total,
    group_key,
    CASE WHEN grouping(group_key) = 0 THEN any_value(kind) END AS kind,
    CASE WHEN grouping(group_key) = 0 THEN any_value(model) END AS model,
    CASE WHEN grouping(group_key) = 0 THEN any_value(client_id) END AS client_id,
    count(*) AS requests,
    avg(failed::INT) AS error_rate,
    avg(timed_out::INT) AS timeout_rate,
    count(ttft_ms) AS with_ttft,
    sum(completion_tokens) FILTER (WHERE NOT failed) / any_value(span_s) AS tokens_per_s,
    count(*) FILTER (WHERE good) AS good,
    count(*) FILTER (WHERE good) / any_value(span_s) AS goodput_rps,
    avg(good::INT) AS goodput_share,
    count(*) / any_value(span_s) AS rps,
    any_value(span_s) AS span_s
FROM base, span
GROUP BY GROUPING SETS ((group_key), ())
)
SELECT
    summary.* EXCLUDE (group_key),
    lats.* EXCLUDE (is_total, group_key),
    tokens.prompt_q,
    tokens.completion_q
FROM summary
JOIN lats ON lats.is_total = summary.is_total AND lats.group_key IS NOT DISTINCT FROM summary.group_key
LEFT JOIN tokens ON tokens.is_total = summary.is_total AND tokens.group_key IS NOT DISTINCT FROM summary.group_key
ORDER BY is_total DESC, requests DESC;
