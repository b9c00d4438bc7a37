-- Request-by-request agreement of two runs of the same traffic (e.g. a recording and its replay,
-- or two replays of one recording): views `fid_a` and `fid_b` are the `lat` of the first run of
-- each side. Ratios are B / A. Each percentile pair is one list-form quantile (one sort a column).
WITH j AS (
    SELECT
        x.ttft_ms AS a_ttft, y.ttft_ms AS b_ttft,
        x.e2e_ms AS a_e2e, y.e2e_ms AS b_e2e,
        x.failed AS a_failed, y.failed AS b_failed
    FROM fid_a x
    JOIN fid_b y USING (request_id)
),
ok AS (SELECT * FROM j WHERE NOT a_failed AND NOT b_failed)
SELECT
    (SELECT count(*) FROM j) AS matched,
    (SELECT count(*) FROM fid_a) AS a_requests,
    (SELECT count(*) FROM fid_b) AS b_requests,
    (SELECT avg((a_failed = b_failed)::INT) FROM j) AS outcome_agreement,
    corr_e2e,
    corr_ttft,
    median_ratio_e2e,
    b_e2e_q[1] / nullif(a_e2e_q[1], 0) AS p50_ratio_e2e,
    b_e2e_q[2] / nullif(a_e2e_q[2], 0) AS p99_ratio_e2e,
    b_ttft_q[1] / nullif(a_ttft_q[1], 0) AS p50_ratio_ttft,
    b_ttft_q[2] / nullif(a_ttft_q[2], 0) AS p99_ratio_ttft
FROM (
    SELECT
        corr(a_e2e, b_e2e) AS corr_e2e,
        corr(a_ttft, b_ttft) AS corr_ttft,
        median(b_e2e / nullif(a_e2e, 0)) AS median_ratio_e2e,
        quantile_cont(a_e2e, [0.5, 0.99]) AS a_e2e_q,
        quantile_cont(b_e2e, [0.5, 0.99]) AS b_e2e_q,
        quantile_cont(a_ttft, [0.5, 0.99]) AS a_ttft_q,
        quantile_cont(b_ttft, [0.5, 0.99]) AS b_ttft_q
    FROM ok
);
