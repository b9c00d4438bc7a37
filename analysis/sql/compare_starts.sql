-- `cmp_starts`: the first request of each run of a side of `compare`, from which its slots are
-- counted (a table, so compare_lat.sql's view does not rescan `lat` for it in every query).
CREATE OR REPLACE TABLE cmp_starts AS
SELECT run, min(epoch(t)) AS t0 FROM lat GROUP BY run;
