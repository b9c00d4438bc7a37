-- Engine metrics sampled from vLLM's /metrics. :glob is replaced by the quoted Parquet glob.
CREATE OR REPLACE VIEW engine_metrics AS
SELECT * FROM read_parquet(:glob, hive_partitioning = true);
