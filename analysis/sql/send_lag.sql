-- How late the replayer sent requests versus their schedule (replays only).
SELECT
    count(send_lag_ms) AS requests,
    quantile_cont(send_lag_ms, [0.5, 0.99]) AS lag_q,
    max(send_lag_ms) AS lag_max
FROM lat;
