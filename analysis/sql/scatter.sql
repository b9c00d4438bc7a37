-- A reproducible sample of successful requests: prompt length vs TTFT (e2e when not streamed).
SELECT prompt_len, coalesce(ttft_ms, e2e_ms) AS latency_ms, ttft_ms IS NOT NULL AS is_ttft, coalesce(client_id, route, '(unknown)') AS who
FROM (SELECT * FROM lat WHERE NOT failED AND prompt_len IS NOT NULL AND coalesce(ttft_ms, e2e_ms) IS NOT NULL)
USING SAMPLE reservoir(3000 ROWS) REPEATABLE (42);
