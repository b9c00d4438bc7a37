-- Azure LLM inference traces (2023 and 2024): TIMESTAMP, ContextTokens, GeneratedTokens, read as
-- csv_rows(ts, prompt, completion) (see csv_rows.sql).
-- TIMESTAMP mixes precisions in the 2024 files ("...00:00:00.0093990", "...00:00:01", fewer
-- trailing zeros, an optional +00:00 offset): DuckDB's cast reads all of them (to microseconds).
SELECT
    TRY_CAST(ts AS TIMESTAMP) AS ts,
    TRY_CAST(prompt AS BIGINT) AS prompt_tokens,
    TRY_CAST(completion AS BIGINT) AS completion_tokens,
    CASE WHEN TRY_CAST(ts AS TIMESTAMP) IS NULL
           OR TRY_CAST(prompt AS BIGINT) IS NULL
           OR TRY_CAST(completion AS BIGINT) IS NULL
         THEN concat_ws(',', ts, prompt, completion) END AS bad
FROM csv_rows
