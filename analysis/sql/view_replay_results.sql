-- Replay results. :glob is replaced by the quoted Parquet glob.
CREATE OR REPLACE VIEW replay_results AS
SELECT * FROM read_parquet(:glob, hive_partitioning = true);
