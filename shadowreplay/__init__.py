"""shadowreplay: record LLM gateway traffic, replay it into a shadow vLLM, analyze tail latency."""

__version__ = "0.1.0"
