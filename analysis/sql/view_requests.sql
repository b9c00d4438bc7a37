-- The recording. :glob is replaced by the quoted Parquet glob, e.g. 'rec/requests/**/*.parquet'.
CREATE OR REPLACE VIEW requests AS
SELECT * FROM read_parquet(:glob, hive_partitioning = true);
