"""Analysis: DuckDB SQL over recordings and replay results (SQL lives in analysis/sql/*.sql)."""
