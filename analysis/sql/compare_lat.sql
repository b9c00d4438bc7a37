-- `cmp_lat`: a side of `compare` (its `lat`, one row per request of each run) with the slot of
-- each request counted from its own run's first request (cmp_starts, compare_starts.sql), and
-- whether it is in the --where subset.
-- Reads `lat_subset`: `lat` with `in_subset`, the user's --where predicate, which compare.py
-- adds as one parsed expression. Parameters: cmp_bucket_s, cmp_by_model, slo_*_ms. ITL is the per-request mean (e2e - ttft) / (tokens - 1), as in the anomaly fold.
CREATE OR REPLACE VIEW cmp_lat AS
SELECT
    lat_subset.run,
    epoch(t) - t0 AS rel_s,
    coalesce(client_id, '(unknown)') AS client,
    -- per model only when a gate asks (compare.py sets cmp_by_model): the finer grain costs time
    CASE WHEN coalesce(getvariable('cmp_by_model'), false) THEN coalesce(model, '(unknown)') END AS model,
    in_subset,
    failed,
    ttft_ms,
    e2e_ms,
    tpot_mean_ms AS tpot_ms,
    coalesce(
        NOT failed
        AND (getvariable('slo_ttft_ms') IS NULL OR coalesce(ttft_ms, e2e_ms) <= getvariable('slo_ttft_ms'))
        AND (getvariable('slo_e2e_ms') IS NULL OR e2e_ms <= getvariable('slo_e2e_ms'))
        AND (getvariable('slo_itl_ms') IS NULL OR tpot_mean_ms <= getvariable('slo_itl_ms')),
        false) AS good,
    completion_tokens,
    epoch(t) + coalesce(e2e_ms, 0) / 1000.0 AS t_end_s,
    epoch(t) AS t_s
FROM lat_subset JOIN cmp_starts USING (run);
