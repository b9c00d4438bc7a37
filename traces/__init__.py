"""Importers of public LLM serving traces and exporters to benchmark tools' formats."""
