"""The one schema of shadowreplay datasets, defined once as Arrow and shared by the recorder,
the importers, the replayer and the analysis. docs/schema.md documents every column.

A dataset is a folder holding one sub-folder per table:

    DIR/requests/date=YYYY-MM-DD/hour=HH/part-*.parquet       (recorder, importers)
    DIR/replay_results/date=YYYY-MM-DD/hour=HH/part-*.parquet (replayer)
    DIR/engine_metrics/date=YYYY-MM-DD/hour=HH/part-*.parquet (metrics sampler)

The partition columns (date, hour) live in the folder names only, never inside the files.
Every file carries SCHEMA_VERSION_KEY and TABLE_KEY in its Parquet key-value metadata.
"""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = "1"
SCHEMA_VERSION_KEY = b"shadowreplay.schema_version"
TABLE_KEY = b"shadowreplay.table"

TS = pa.timestamp("us", tz="UTC")

REQUESTS = "requests"
REPLAY_RESULTS = "replay_results"
ENGINE_METRICS = "engine_metrics"
TABLES = (REQUESTS, REPLAY_RESULTS, ENGINE_METRICS)

KINDS = ("chat", "completion", "embedding", "responses", "messages", "grpc", "http")  # shadowreplay.llmapi defines the LLM ones
PROTOCOLS = ("http/1.1", "h2", "grpc")

GRPC_MESSAGE = pa.struct(
    [
        pa.field("direction", pa.string()),  # "request" | "response"
        pa.field("t_ms", pa.float64()),  # ms since ts_start when the frame passed the proxy
        pa.field("compressed", pa.bool_()),  # the gRPC frame's compressed flag
        pa.field("size", pa.int32()),  # original payload length in bytes
        pa.field("data", pa.binary()),  # scrubbed protobuf payload (lengths re-encoded)
    ]
)

_REQUEST_FIELDS = [
    pa.field("request_id", pa.string(), nullable=False),
    pa.field("ts_start", TS, nullable=False),
    pa.field("ts_first_byte", TS),
    pa.field("ts_end", TS),
    pa.field("method", pa.string()),
    pa.field("scheme", pa.string()),
    pa.field("host", pa.string()),
    pa.field("port", pa.int32()),
    pa.field("path", pa.string()),
    pa.field("status", pa.int32()),
    pa.field("protocol", pa.string()),
    pa.field("kind", pa.string()),
    pa.field("client_id", pa.string()),
    pa.field("user_agent", pa.string()),
    pa.field("model", pa.string()),
    pa.field("stream", pa.bool_()),
    pa.field("max_tokens", pa.int32()),
    pa.field("prompt_chars", pa.int64()),
    pa.field("prompt_tokens", pa.int32()),
    pa.field("completion_tokens", pa.int32()),
    pa.field("cached_tokens", pa.int32()),
    pa.field("finish_reason", pa.string()),
    pa.field("ttft_ms", pa.float64()),
    pa.field("e2e_ms", pa.float64()),
    pa.field("itl_ms", pa.list_(pa.float64())),
    pa.field("prefix_hash", pa.string()),
    pa.field("request_body", pa.string()),
    pa.field("response_text", pa.string()),
    pa.field("request_headers", pa.string()),  # JSON object text, scrubbed; secrets never kept
    pa.field("pii_counts", pa.map_(pa.string(), pa.int32())),
    pa.field("error", pa.string()),
    # extras
    pa.field("request_bytes", pa.int64()),
    pa.field("response_bytes", pa.int64()),
    pa.field("body_truncated", pa.bool_()),
    pa.field("chunks", pa.int32()),  # streamed chunks (SSE events with data) seen
    pa.field("grpc_service", pa.string()),
    pa.field("grpc_method", pa.string()),
    pa.field("grpc_status", pa.int32()),
    pa.field("grpc_trailers", pa.string()),  # JSON object text, scrubbed
    pa.field("grpc_messages", pa.list_(GRPC_MESSAGE)),
    pa.field("hash_ids", pa.list_(pa.int64())),  # prefix block ids (imported traces, exports)
    pa.field("hash_block_chars", pa.int32()),  # hash_ids blocks are this many characters (recorder --keep shape)
    pa.field("message_shape", pa.string()),  # JSON: roles, lengths, part types, keyed tool names (--keep shape)
    pa.field("language", pa.string()),  # coarse language of the prompt (--keep shape)
    pa.field("content_type", pa.string()),  # "text" | "code" | "json" (--keep shape)
    pa.field("source", pa.string()),  # "recorder" | "azure-llm" | "burstgpt" | "mooncake" | ...
]

_REPLAY_RESULT_FIELDS = [
    pa.field("request_id", pa.string(), nullable=False),
    pa.field("target", pa.string()),
    pa.field("route", pa.string()),  # name of the --route rule that chose the target, or null
    pa.field("scheduled_at", TS, nullable=False),
    pa.field("sent_at", TS),
    pa.field("send_lag_ms", pa.float64()),
    pa.field("cap_delay_ms", pa.float64()),  # part of the lag caused by --max-in-flight
    pa.field("ts_first_byte", TS),
    pa.field("ts_end", TS),
    pa.field("status", pa.int32()),
    pa.field("error", pa.string()),
    pa.field("kind", pa.string()),
    pa.field("model", pa.string()),
    pa.field("client_id", pa.string()),
    pa.field("ttft_ms", pa.float64()),
    pa.field("itl_ms", pa.list_(pa.float64())),
    pa.field("e2e_ms", pa.float64()),
    pa.field("prompt_tokens", pa.int32()),
    pa.field("completion_tokens", pa.int32()),
    pa.field("cached_tokens", pa.int32()),
    pa.field("expected_completion_tokens", pa.int32()),
    pa.field("prompt_chars", pa.int64()),
    pa.field("lead_in", pa.bool_()),  # sent before the selected window to warm the shadow (--lead-in)
]

_ENGINE_METRIC_FIELDS = [
    pa.field("ts", TS, nullable=False),
    pa.field("source", pa.string()),  # the metrics URL scraped
    pa.field("metric", pa.string(), nullable=False),
    pa.field("labels", pa.map_(pa.string(), pa.string())),
    pa.field("value", pa.float64()),
]


def _with_meta(fields: list[pa.Field], table: str) -> pa.Schema:
    return pa.schema(fields, metadata={SCHEMA_VERSION_KEY: SCHEMA_VERSION.encode(), TABLE_KEY: table.encode()})


REQUESTS_SCHEMA = _with_meta(_REQUEST_FIELDS, REQUESTS)
REPLAY_RESULTS_SCHEMA = _with_meta(_REPLAY_RESULT_FIELDS, REPLAY_RESULTS)
ENGINE_METRICS_SCHEMA = _with_meta(_ENGINE_METRIC_FIELDS, ENGINE_METRICS)

SCHEMAS: dict[str, pa.Schema] = {
    REQUESTS: REQUESTS_SCHEMA,
    REPLAY_RESULTS: REPLAY_RESULTS_SCHEMA,
    ENGINE_METRICS: ENGINE_METRICS_SCHEMA,
}

# Columns without which a requests dataset cannot be replayed or analyzed at all.
REQUIRED_REQUEST_COLUMNS = ("request_id", "ts_start")
# The time column each table is partitioned and ordered by.
TIME_COLUMN = {REQUESTS: "ts_start", REPLAY_RESULTS: "scheduled_at", ENGINE_METRICS: "ts"}
