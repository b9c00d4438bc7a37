-- TP99 latency and mean prompt per slot of the fold, over all periods together. Needs fold.sql.
SELECT
    slot,
    count(*) AS requests,
    quantile_cont(lat_ms, 0.99) FILTER (WHERE NOT failed) AS tp99,
    avg(prompt_len) AS mean_prompt
FROM folded
GROUP BY slot
ORDER BY slot;
