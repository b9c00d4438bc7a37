-- `lat`: one row per request with the columns every analysis query reads, derived from
-- `lat_source` (made by lat_requests.sql, lat_replay_results.sql or lat_replayed.sql).
CREATE OR REPLACE VIEW lat AS
SELECT
    request_id,
    t,
    fold_t,
    kind,
    model,
    client_id,
    hash(kind, model, client_id) AS group_key,  -- one integer to group by instead of three strings
    route,
    status,
    error,
    (error IS NOT NULL OR coalesce(status, 200) >= 400) AS failed,
    CASE WHEN error IS NULL THEN coalesce(status, 0) IN (408, 504)  -- lower() only where there is an error
        ELSE coalesce(status, 0) IN (408, 504) OR contains(lower(error), 'timeout') OR contains(lower(error), 'timed out')
    END AS timed_out,
    ttft_ms,
    e2e_ms,
    itl_ms,
    (e2e_ms - ttft_ms) / nullif(completion_tokens - 1, 0) AS tpot_mean_ms,  -- without itl_ms lists
    coalesce(list_avg(itl_ms), tpot_mean_ms) AS tpot_ms,
    prompt_tokens,
    completion_tokens,
    coalesce(prompt_tokens::DOUBLE, prompt_chars / 4.0) AS prompt_len,
    prefix_key,
    send_lag_ms
FROM lat_source;
