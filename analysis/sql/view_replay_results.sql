-- Replay results. :glob is replaced by the quoted Parquet glob(s),
-- :absent by a typed NULL for each documented column no file has (files from other tools, older
-- files), so that every query may name every column.
CREATE OR REPLACE VIEW replay_results AS
SELECT * :absent FROM read_parquet(:glob, hive_partitioning = true, union_by_name = true);
