-- Slots whose TP99 is far above the typical cell in at least min_periods periods.
-- Needs fold.sql first. Parameters: tp99_ratio_min (e.g. 2), prompt_ratio_min (NULL = not
-- required), min_requests (cells with fewer requests are not judged), min_periods (e.g. 2),
-- min_share (the share of the slot's judged periods that must be anomalous, e.g. 0.5: with many
-- periods, two noisy cells out of thirty are chance, not a pattern).
-- The typical cell is the median over all judged cells, of TP99 and of mean prompt length.
CREATE OR REPLACE TEMP TABLE fold_flags AS
WITH typ AS (
    SELECT median(tp99) AS typ_tp99, median(mean_prompt) AS typ_prompt
    FROM fold_cells
    WHERE n >= getvariable('min_requests')
)
SELECT
    c.*,
    typ_tp99,
    typ_prompt,
    tp99 / typ_tp99 AS tp99_ratio,
    mean_prompt / typ_prompt AS prompt_ratio,
    coalesce(
        n >= getvariable('min_requests')
        AND tp99 / typ_tp99 >= getvariable('tp99_ratio_min')
        AND (getvariable('prompt_ratio_min') IS NULL OR mean_prompt / typ_prompt >= getvariable('prompt_ratio_min')),
        false) AS anomalous
FROM fold_cells c, typ;

SELECT
    slot,
    count(*) FILTER (WHERE n >= getvariable('min_requests')) AS periods_seen,
    count(*) FILTER (WHERE anomalous) AS periods_anomalous,
    median(tp99_ratio) FILTER (WHERE anomalous) AS tp99_ratio,
    median(prompt_ratio) FILTER (WHERE anomalous) AS prompt_ratio,
    median(tp99) FILTER (WHERE anomalous) AS tp99_ms,
    any_value(typ_tp99) AS typical_tp99_ms,
    median(mean_prompt) FILTER (WHERE anomalous) AS mean_prompt,
    any_value(typ_prompt) AS typical_prompt,
    sum(n) FILTER (WHERE anomalous) AS requests,
    list(period_no ORDER BY period_no) FILTER (WHERE anomalous) AS anomalous_periods
FROM fold_flags
GROUP BY slot
HAVING count(*) FILTER (WHERE anomalous) >= getvariable('min_periods')
   AND count(*) FILTER (WHERE anomalous)
       >= getvariable('min_share') * count(*) FILTER (WHERE n >= getvariable('min_requests'))
ORDER BY tp99_ratio DESC;
