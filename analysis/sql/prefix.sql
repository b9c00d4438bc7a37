-- Prefix sharing: the share of requests whose prefix (prefix_hash, or the first hash_ids block
-- of imported traces) is shared with at least one other request: what prefix caching could save.
WITH per AS (
    SELECT client_id, prefix_key, count(*) AS n
    FROM lat
    WHERE prefix_key IS NOT NULL
    GROUP BY client_id, prefix_key
),
same AS (
    SELECT prefix_key, sum(n) AS total FROM per GROUP BY prefix_key
)
SELECT
    grouping(client_id) = 1 AS is_total,
    client_id,
    sum(n)::BIGINT AS requests,
    coalesce(sum(n) FILTER (WHERE total > 1), 0)::BIGINT AS shared,
    coalesce(sum(n) FILTER (WHERE total > 1), 0) / sum(n) AS shared_share,
    count(DISTINCT prefix_key) AS distinct_prefixes
FROM per
JOIN same USING (prefix_key)
GROUP BY GROUPING SETS ((client_id), ())
ORDER BY is_total DESC, requests DESC;
