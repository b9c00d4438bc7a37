-- A replay's side of `lat` joined to its recording (view_replayed.sql): one row per replayed
-- request, with what the recording knows (prefix hash, route, lengths). Run lat.sql after it.
CREATE OR REPLACE VIEW lat_source AS
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
    coalesce(route, path) AS route,
    status,
    error,
    ttft_ms,
    e2e_ms,
    itl_ms,
    coalesce(prompt_tokens, rec_prompt_tokens) AS prompt_tokens,
    completion_tokens,
    prompt_chars,
    coalesce(prefix_hash, CAST(hash_ids[1] AS VARCHAR)) AS prefix_key,
    send_lag_ms
FROM replayed
WHERE NOT coalesce(lead_in, false);  -- the lead-in (replay --lead-in) only warmed the shadow
