-- Request-by-request agreement of two runs of the same traffic (e.g. a recording and its replay,
-- or two replays of one recording): views `fid_a` and `fid_b` are the `lat` of the first run of
-- each side, `rid` the hash of request_id. Ratios are B / A; correlations and the median ratio over the pairs where both
-- succeeded. (The percentiles of each side are compare's figures, with their intervals.)
WITH j AS (
    SELECT
        x.ttft_ms AS a_ttft, y.ttft_ms AS b_ttft,
        x.e2e_ms AS a_e2e, y.e2e_ms AS b_e2e,
        x.failed AS a_failed, y.failed AS b_failed
    FROM fid_a x
    JOIN fid_b y USING (rid)
)
SELECT
    count(*) AS matched,
    (SELECT count(*) FROM fid_a) AS a_requests,
    (SELECT count(*) FROM fid_b) AS b_requests,
    avg((a_failed = b_failed)::INT) AS outcome_agreement,
    corr(a_e2e, b_e2e) FILTER (WHERE NOT a_failed AND NOT b_failed) AS corr_e2e,
    corr(a_ttft, b_ttft) FILTER (WHERE NOT a_failed AND NOT b_failed) AS corr_ttft,
    median(b_e2e / nullif(a_e2e, 0)) FILTER (WHERE NOT a_failed AND NOT b_failed) AS median_ratio_e2e
FROM j;
