-- The per-request values the gates judge (analysis/expr.py): one row per request of `gate_lat`,
-- which is `lat` narrowed by the user's --where and the gate's scope (@client, @model), both
-- added by expr.py through the relational API.
-- ITL is the request's own mean gap (tpot_ms), so each request counts once.
SELECT
    failed,
    ttft_ms,
    e2e_ms,
    tpot_ms
FROM gate_lat;
