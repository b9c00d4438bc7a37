-- Mean engine load during each anomalous slot's anomalous cells, next to the overall mean.
-- Needs engine_windows.sql and anomalies.sql first.
SELECT
    w.slot,
    avg(w.running) AS running,
    avg(w.waiting) AS waiting,
    (SELECT avg(running) FROM engine_windows) AS running_overall,
    (SELECT avg(waiting) FROM engine_windows) AS waiting_overall
FROM engine_windows w
JOIN fold_flags f USING (period_no, slot)
WHERE f.anomalous
GROUP BY w.slot;
