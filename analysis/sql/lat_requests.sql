-- The recording's side of `lat`: one row per recorded request. Run lat.sql after it.
CREATE OR REPLACE VIEW lat_source AS
SELECT
    request_id,
    ts_start AS t,
    ts_start AS fold_t,  -- the clock periodic folds use
    kind,
    model,
    client_id,
    path AS route,
    status,
    error,
    ttft_ms,
    e2e_ms,
    itl_ms,
    prompt_tokens,
    completion_tokens,
    prompt_chars,
    coalesce(prefix_hash, CAST(hash_ids[1] AS VARCHAR)) AS prefix_key,
    NULL::DOUBLE AS send_lag_ms
FROM requests;
