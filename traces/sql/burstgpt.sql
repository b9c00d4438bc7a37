-- BurstGPT (all releases): Timestamp is seconds since the start of the trace (float), read as
-- csv_rows(ts, prompt, completion, model, client) (see csv_rows.sql); model and client are NULL
-- when the layout lacks them.
SELECT
    TRY_CAST(ts AS DOUBLE) AS rel_s,
    TRY_CAST(prompt AS BIGINT) AS prompt_tokens,
    TRY_CAST(completion AS BIGINT) AS completion_tokens,
    model AS model,
    client AS client_id,
    CASE WHEN TRY_CAST(ts AS DOUBLE) IS NULL
           OR TRY_CAST(prompt AS BIGINT) IS NULL
           OR TRY_CAST(completion AS BIGINT) IS NULL
         THEN concat_ws(',', ts, prompt, completion) END AS bad
FROM csv_rows
