-- One row per replayed request (replay results alone, without the recording).
CREATE OR REPLACE VIEW lat AS
SELECT
    request_id,
    scheduled_at AS t,
    scheduled_at AS fold_t,  -- no recording known: folds use the replay's own clock
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
    NULL::VARCHAR AS prefix_key,
    send_lag_ms
FROM replay_results;
