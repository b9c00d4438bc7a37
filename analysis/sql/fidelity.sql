-- Request-by-request agreement of two runs of the same traffic (e.g. a recording and its replay,
-- or two replays of one recording): views `fid_a` and `fid_b` are the `lat` of the first run of
-- each side. Ratios are B / A.
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
    corr(a_e2e, b_e2e) AS corr_e2e,
    corr(a_ttft, b_ttft) AS corr_ttft,
    median(b_e2e / nullif(a_e2e, 0)) AS median_ratio_e2e,
    quantile_cont(b_e2e, 0.5) / nullif(quantile_cont(a_e2e, 0.5), 0) AS p50_ratio_e2e,
    quantile_cont(b_e2e, 0.99) / nullif(quantile_cont(a_e2e, 0.99), 0) AS p99_ratio_e2e,
    quantile_cont(b_ttft, 0.5) / nullif(quantile_cont(a_ttft, 0.5), 0) AS p50_ratio_ttft,
    quantile_cont(b_ttft, 0.99) / nullif(quantile_cont(a_ttft, 0.99), 0) AS p99_ratio_ttft
FROM ok;
