-- Replay results next to what the recording saw for the same request (needs both views).
CREATE OR REPLACE VIEW replayed AS
SELECT
    r.*,
    q.ts_start AS rec_ts_start,
    q.ts_first_byte AS rec_ts_first_byte,
    q.ts_end AS rec_ts_end,
    q.status AS rec_status,
    q.error AS rec_error,
    q.ttft_ms AS rec_ttft_ms,
    q.e2e_ms AS rec_e2e_ms,
    q.itl_ms AS rec_itl_ms,
    q.prompt_tokens AS rec_prompt_tokens,
    q.completion_tokens AS rec_completion_tokens,
    q.cached_tokens AS rec_cached_tokens,
    q.path,
    q.stream,
    q.max_tokens,
    q.prefix_hash,
    q.hash_ids
FROM replay_results r
LEFT JOIN requests q USING (request_id);
