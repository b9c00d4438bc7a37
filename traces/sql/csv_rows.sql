-- A trace CSV read as text ($path; $columns maps each header name, in order, to VARCHAR), so a value
-- that does not parse becomes NULL in the casts of azure.sql/burstgpt.sql and is reported with its
-- line; structural errors (a short row, a bad quote) name the line too. traces/csvread.py renames
-- the columns to the names those files read (ts, prompt, completion, model, client) as the view
-- csv_rows.
SELECT *
FROM read_csv($path, header = true, all_varchar = true, delim = ',', quote = '"',
              compression = 'auto', auto_detect = false, columns = $columns)
