-- Who sent the traffic of the anomalous cells: per slot and client (or route when requests have
-- no client_id), the share of the slot's long prompts (prompt >= long_factor x the typical mean
-- prompt) and of its requests, next to the client's share of requests everywhere else.
-- Needs fold.sql, anomalies.sql and anomaly_slots.sql first. Parameter: long_factor (e.g. 2).
WITH cells AS (
    SELECT period_no, slot, typ_prompt FROM fold_flags WHERE anomalous
),
inside AS (
    SELECT
        f.slot,
        f.who,
        count(*) AS requests,
        count(*) FILTER (WHERE f.prompt_len >= getvariable('long_factor') * c.typ_prompt) AS long_prompts,
        avg(f.prompt_len) AS mean_prompt
    FROM folded f
    JOIN cells c USING (period_no, slot)
    GROUP BY f.slot, f.who
),
outside AS (
    SELECT who, count(*) / sum(count(*)) OVER () AS share_elsewhere
    FROM folded f
    ANTI JOIN cells c USING (period_no, slot)
    GROUP BY who
)
SELECT
    slot,
    who,
    requests,
    long_prompts,
    coalesce(long_prompts / nullif(sum(long_prompts) OVER (PARTITION BY slot), 0), 0) AS long_share,
    requests / sum(requests) OVER (PARTITION BY slot) AS request_share,
    coalesce(share_elsewhere, 0) AS share_elsewhere,
    mean_prompt
FROM inside
LEFT JOIN outside USING (who)
ORDER BY slot, long_share DESC, requests DESC;
