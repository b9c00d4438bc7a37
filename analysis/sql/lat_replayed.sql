-- One row per replayed request, with what the recording knows (prefix hash, route, lengths).
CREATE OR REPLACE VIEW lat AS
SELECT
    request_id,
    scheduled_at AS t,
    -- Periodic folds use the recording's clock, so a replay's slots line up with its recording's
    -- whenever (and at whatever speed) it ran; a request the recording lacks is placed at its
    -- scheduled time minus the replay's median offset from the recording.
    coalesce(
        rec_ts_start,
        scheduled_at - to_microseconds((SELECT median(epoch_us(scheduled_at) - epoch_us(rec_ts_start))::BIGINT FROM replayed)),
        scheduled_at
    ) AS fold_t,
    kind,
    model,
    client_id,
    hash(kind, model, client_id) AS group_key,  -- one integer to group by instead of three strings
    coalesce(route, path) AS route,
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
    coalesce(prompt_tokens, rec_prompt_tokens) AS prompt_tokens,
    completion_tokens,
    coalesce(prompt_tokens::DOUBLE, rec_prompt_tokens::DOUBLE, prompt_chars / 4.0) AS prompt_len,
    coalesce(prefix_hash, CAST(hash_ids[1] AS VARCHAR)) AS prefix_key,
    send_lag_ms
FROM replayed;
