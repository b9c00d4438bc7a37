-- The warm-up (--warmup): after lat.sql, `lat` leaves out the requests of the first warmup_s
-- seconds after the run's first request, for every analysis. Run only when warmup_s > 0.
ALTER VIEW lat RENAME TO lat_full;
CREATE OR REPLACE VIEW lat AS
SELECT * FROM lat_full
WHERE t >= (SELECT min(t) FROM lat_full) + to_microseconds((getvariable('warmup_s') * 1e6)::BIGINT);
