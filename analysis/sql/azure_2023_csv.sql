-- The Azure LLM inference traces 2023 (CSV: TIMESTAMP, ContextTokens, GeneratedTokens) as a
-- `requests` view straight from the files, without importing them. Run from the folder holding
-- the CSVs (or edit the glob):
--     duckdb -c ".read analysis/sql/azure_2023_csv.sql"   (from ../shared/data/traces)
-- The columns the analysis files read are there (NULL where the trace has nothing), so
-- lat_requests.sql, lat.sql and the other files run after it. client_id is the trace name (code / conv).
CREATE OR REPLACE VIEW requests AS
SELECT
    regexp_extract(filename, 'Trace_([a-z]+)_2023', 1) || '-' || row_number() OVER (PARTITION BY filename ORDER BY "TIMESTAMP") AS request_id,
    -- 100 ns digits: keep microseconds
    CAST(left("TIMESTAMP", 26) || '+00' AS TIMESTAMPTZ) AS ts_start,
    'completion' AS kind,
    NULL::VARCHAR AS model,
    regexp_extract(filename, 'Trace_([a-z]+)_2023', 1) AS client_id,
    NULL::VARCHAR AS path,
    NULL::INTEGER AS status,
    NULL::VARCHAR AS error,
    NULL::DOUBLE AS ttft_ms,
    NULL::DOUBLE AS e2e_ms,
    NULL::DOUBLE[] AS itl_ms,
    "ContextTokens"::INTEGER AS prompt_tokens,
    "GeneratedTokens"::INTEGER AS completion_tokens,
    NULL::BIGINT AS prompt_chars,
    NULL::VARCHAR AS prefix_hash,
    NULL::BIGINT[] AS hash_ids
FROM read_csv('AzureLLMInferenceTrace_*_2023.csv', filename = true, header = true,
              columns = {'TIMESTAMP': 'VARCHAR', 'ContextTokens': 'INTEGER', 'GeneratedTokens': 'INTEGER'});

-- Per trace: volume, rate and token sizes.
SELECT
    client_id AS trace,
    count(*) AS requests,
    min(ts_start) AS first,
    max(ts_start) AS last,
    round(count(*) / (epoch(max(ts_start)) - epoch(min(ts_start))), 3) AS req_per_s,
    quantile_cont(prompt_tokens, 0.5) AS prompt_p50,
    quantile_cont(prompt_tokens, 0.99) AS prompt_p99,
    quantile_cont(completion_tokens, 0.5) AS output_p50,
    quantile_cont(completion_tokens, 0.99) AS output_p99
FROM requests
GROUP BY client_id
ORDER BY client_id;
