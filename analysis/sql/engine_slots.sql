-- Mean engine load during each anomalous slot's anomalous cells, next to the overall mean.
-- Needs engine_windows.sql and anomaly_slots.sql first.
-- Rounded: a parallel sum of doubles differs in the last bit from run to run, and two runs of
-- the same query must print the same numbers.
SELECT
    w.slot,
    round(avg(w.running), 4) AS running,
    round(avg(w.waiting), 4) AS waiting,
    round((SELECT avg(running) FROM engine_windows), 4) AS running_overall,
    round((SELECT avg(waiting) FROM engine_windows), 4) AS waiting_overall
FROM engine_windows w
JOIN fold_flags f USING (period_no, slot)
WHERE f.anomalous
GROUP BY w.slot;
