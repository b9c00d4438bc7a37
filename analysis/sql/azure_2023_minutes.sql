-- Per trace and minute: arrivals and prompt sizes, and minutes whose mean prompt is at least twice
-- the trace's median minute (long-prompt bursts). Run after azure_2023_csv.sql (or on an imported
-- dataset's `requests` view).
WITH m AS (
    SELECT
        client_id AS trace,
        date_trunc('minute', ts_start) AS minute,
        count(*) AS requests,
        avg(prompt_tokens) AS mean_prompt,
        quantile_cont(prompt_tokens, 0.99) AS p99_prompt
    FROM requests
    GROUP BY ALL
)
SELECT
    *,
    mean_prompt / median(mean_prompt) OVER (PARTITION BY trace) AS prompt_ratio,
    mean_prompt >= 2 * median(mean_prompt) OVER (PARTITION BY trace) AS long_prompt_burst
FROM m
ORDER BY trace, minute;
