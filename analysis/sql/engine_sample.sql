-- A sample of engine windows (batch size, P99 latency, queue) for the report's scatter plot.
-- Needs engine_windows.sql.
SELECT running, p99_ms, waiting
FROM engine_windows
WHERE running IS NOT NULL AND p99_ms IS NOT NULL
USING SAMPLE reservoir(3000 ROWS) REPEATABLE (7);
