-- Prefix sharing: the share of requests whose prefix (prefix_hash, or the first hash_ids block
-- of imported traces) is shared with at least one other request: what prefix caching could save.
WITH p AS (
    SELECT client_id, prefix_key, count(*) OVER (PARTITION BY prefix_key) AS same
    FROM lat
    WHERE prefix_key IS NOT NULL
)
SELECT
    grouping(client_id) = 1 AS is_total,
    client_id,
    count(*) AS requests,
    count(*) FILTER (WHERE same > 1) AS shared,
    avg((same > 1)::INT) AS shared_share,
    count(DISTINCT prefix_key) AS distinct_prefixes
FROM p
GROUP BY GROUPING SETS ((client_id), ())
ORDER BY is_total DESC, requests DESC;
