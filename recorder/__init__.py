"""The recorder: a mitmproxy addon that writes scrubbed gateway traffic to Parquet."""
