-- A replay's side of `lat` without its recording: one row per replayed request. Run lat.sql after it.
CREATE OR REPLACE VIEW lat_source AS
SELECT
    request_id,
    scheduled_at AS t,
    scheduled_at AS fold_t,  -- no recording known: folds use the replay's own clock
    kind,
    model,
    client_id,
    route,
    status,
    error,
    ttft_ms,
    e2e_ms,
    itl_ms,
    prompt_tokens,
    completion_tokens,
    prompt_chars,
    NULL::VARCHAR AS prefix_key,
    send_lag_ms
FROM replay_results
WHERE NOT coalesce(lead_in, false);  -- the lead-in (replay --lead-in) only warmed the shadow
