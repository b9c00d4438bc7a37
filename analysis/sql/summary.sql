-- Per kind/model/client and overall: counts, error/timeout rates, TTFT / e2e / per-request ITL
-- percentiles, output tokens/s and goodput.
-- Parameters (SET VARIABLE name = value; NULL or unset = no such SLO):
--   slo_ttft_ms, slo_e2e_ms, slo_itl_ms
--   sketch_gamma, exact_max: the latency sketch (analysis/sketch.py)
-- A request is good when it did not fail and meets every SLO set. A request without a TTFT
-- (not streamed) is judged on its e2e latency for the TTFT SLO: its first byte was the answer.
-- Everything is computed per group in two passes over `lat` (the counts, then one histogram of
-- every column), and the overall row is summed from the groups' rows: counts and histograms
-- merge by adding, so no pass keeps a row per request (bounded memory at any size).
-- Every percentile is read from a histogram (count per value) by one ranking: the value at
-- 0-based rank r is the largest value with fewer than r+1 values below it; between ranks it
-- interpolates like quantile_cont. Token counts take few distinct values: their histogram is
-- exact. Latencies are binned by the sketch of analysis/sketch.py (bucket ceil(ln|v| / ln gamma),
-- counted at the bucket's representative 2 gamma^i / (gamma + 1), within alpha of its values)
-- unless their group holds at most exact_max values, which keep their exact values; the overall
-- histogram is sketched again when it holds over exact_max values (a representative's bucket is
-- its own, so sketching the groups first changes nothing).
WITH g AS (
    SELECT
        group_key,
        any_value(kind) AS kind,
        any_value(model) AS model,
        any_value(client_id) AS client_id,
        count(*) AS requests,
        count(*) FILTER (WHERE failed) AS failures,
        count(*) FILTER (WHERE timed_out) AS timeouts,
        count(ttft_ms) AS with_ttft,
        count(e2e_ms) AS with_e2e,
        count(tpot_ms) AS with_tpot,
        max(ttft_ms) AS ttft_max,
        max(e2e_ms) AS e2e_max,
        max(tpot_ms) AS tpot_max,
        sum(completion_tokens) FILTER (WHERE NOT failed) AS tokens,
        count(*) FILTER (WHERE
            NOT failed
            AND (getvariable('slo_ttft_ms') IS NULL OR coalesce(ttft_ms, e2e_ms) <= getvariable('slo_ttft_ms'))
            AND (getvariable('slo_e2e_ms') IS NULL OR e2e_ms <= getvariable('slo_e2e_ms'))
            AND (getvariable('slo_itl_ms') IS NULL OR tpot_ms <= getvariable('slo_itl_ms'))) AS good,
        min(epoch(t)) AS t0,
        max(epoch(t) + coalesce(e2e_ms, 0) / 1000.0) AS t1
    FROM lat
    GROUP BY group_key
),
span AS (
    SELECT greatest(max(t1) - min(t0), 1e-3) AS span_s FROM g
),
summary AS (
    SELECT false AS is_total, group_key, kind, model, client_id, requests, failures, timeouts, with_ttft,
        ttft_max, e2e_max, tpot_max, tokens, good
    FROM g
    UNION ALL
    SELECT true, NULL, NULL, NULL, NULL, sum(requests), sum(failures), sum(timeouts), sum(with_ttft),
        max(ttft_max), max(e2e_max), max(tpot_max), sum(tokens), sum(good)
    FROM g
),
-- One row per (request, column) with its histogram key k: the exact value for token counts and
-- small groups, else the value's sketch bucket, coded as one number: 0 for zero, else
-- sign(v) * (ceil(ln|v| / ln gamma) + 1e6) (the offset keeps the index's sign apart). One
-- UNION ALL branch per column: each streams (a cross join with a list of columns would buffer
-- every request); small groups are found with IN, whose build side is always the few groups.
vals AS (
    SELECT group_key, col, exact,
        CASE WHEN exact THEN v WHEN v = 0 THEN 0.0
            ELSE sign(v) * (ceil(ln(abs(v)) / ln(getvariable('sketch_gamma'))) + 1e6)
        END AS k
    FROM (
        SELECT group_key, 'ttft' AS col, ttft_ms AS v,
            group_key IN (SELECT group_key FROM g WHERE with_ttft <= getvariable('exact_max')) AS exact
        FROM lat WHERE ttft_ms IS NOT NULL
        UNION ALL
        SELECT group_key, 'e2e', e2e_ms, group_key IN (SELECT group_key FROM g WHERE with_e2e <= getvariable('exact_max'))
        FROM lat WHERE e2e_ms IS NOT NULL
        UNION ALL
        SELECT group_key, 'tpot', tpot_ms, group_key IN (SELECT group_key FROM g WHERE with_tpot <= getvariable('exact_max'))
        FROM lat WHERE tpot_ms IS NOT NULL
        UNION ALL
        SELECT group_key, 'prompt', prompt_len, true FROM lat WHERE prompt_len IS NOT NULL
        UNION ALL
        SELECT group_key, 'completion', CAST(completion_tokens AS DOUBLE), true FROM lat WHERE completion_tokens IS NOT NULL
    ) x
),
group_hist AS (
    SELECT col, group_key, exact, k, count(*) AS c FROM vals GROUP BY ALL
),
-- Each histogram row's value v (a bucket's representative 2 gamma^i / (gamma + 1), mirrored for
-- a negative one) and its bucket b (an exact value's, for a sketched overall row).
keyed AS (
    SELECT col, group_key, c,
        CASE WHEN exact OR k = 0 THEN k
            ELSE sign(k) * 2 * pow(getvariable('sketch_gamma'), abs(k) - 1e6) / (getvariable('sketch_gamma') + 1)
        END AS v,
        CASE WHEN NOT exact OR k = 0 THEN k
            ELSE sign(k) * (ceil(ln(abs(k)) / ln(getvariable('sketch_gamma'))) + 1e6)
        END AS b
    FROM group_hist
),
total_exact AS (
    SELECT col, col IN ('prompt', 'completion') OR sum(c) <= getvariable('exact_max') AS exact FROM keyed GROUP BY col
),
hist AS (
    SELECT col, false AS is_total, group_key, v, c FROM keyed
    UNION ALL
    SELECT col, true, NULL,
        CASE WHEN exact OR tk = 0 THEN tk
            ELSE sign(tk) * 2 * pow(getvariable('sketch_gamma'), abs(tk) - 1e6) / (getvariable('sketch_gamma') + 1)
        END,
        sum(c)
    FROM (SELECT h.col, t.exact, CASE WHEN t.exact THEN h.v ELSE h.b END AS tk, h.c FROM keyed h JOIN total_exact t ON t.col = h.col)
    GROUP BY col, exact, tk
),
ranked AS (
    SELECT
        *,
        sum(c) OVER (PARTITION BY col, is_total, group_key ORDER BY v ROWS UNBOUNDED PRECEDING) - c AS below,
        sum(c) OVER (PARTITION BY col, is_total, group_key) AS n
    FROM hist
),
at_q AS (
    SELECT col, is_total, group_key, q, n,
        max(v) FILTER (WHERE below <= floor((n - 1) * q)) AS lo,
        max(v) FILTER (WHERE below <= ceil((n - 1) * q)) AS hi,
        (n - 1) * q - floor((n - 1) * q) AS d
    FROM ranked, (VALUES (0.5), (0.95), (0.99)) qs(q)
    GROUP BY col, is_total, group_key, q, n
),
pcts AS (
    SELECT is_total, group_key,
        list(lo + d * (hi - lo) ORDER BY q) FILTER (WHERE col = 'prompt' AND q <> 0.95) AS prompt_q,
        list(lo + d * (hi - lo) ORDER BY q) FILTER (WHERE col = 'completion' AND q <> 0.95) AS completion_q,
        list(lo + d * (hi - lo) ORDER BY q) FILTER (WHERE col = 'ttft') AS ttft_q,
        list(lo + d * (hi - lo) ORDER BY q) FILTER (WHERE col = 'e2e') AS e2e_q,
        list(lo + d * (hi - lo) ORDER BY q) FILTER (WHERE col = 'tpot') AS tpot_q,
        coalesce(bool_or(n > getvariable('exact_max')) FILTER (WHERE col IN ('ttft', 'e2e', 'tpot')), false) AS sketched
    FROM at_q
    GROUP BY is_total, group_key
)
SELECT
    s.is_total,
    s.kind,
    s.model,
    s.client_id,
    s.requests,
    s.failures / s.requests AS error_rate,
    s.timeouts / s.requests AS timeout_rate,
    s.with_ttft,
    s.tokens / span.span_s AS tokens_per_s,
    s.good,
    s.good / span.span_s AS goodput_rps,
    s.good / s.requests AS goodput_share,
    s.requests / span.span_s AS rps,
    span.span_s,
    p.ttft_q,
    s.ttft_max,
    p.e2e_q,
    s.e2e_max,
    p.tpot_q,
    s.tpot_max,
    coalesce(p.sketched, false) AS sketched,
    p.prompt_q,
    p.completion_q
FROM summary s
CROSS JOIN span
LEFT JOIN pcts p ON p.is_total = s.is_total AND p.group_key IS NOT DISTINCT FROM s.group_key
ORDER BY s.is_total DESC, s.requests DESC;
