"""OpenAI request bodies with timestamps, one JSON object per line. Two shapes:

- wrapped: {"timestamp": T, "body": {...}, "id": optional, "path": optional,
            "prompt_tokens": optional, "completion_tokens": optional}
- flat:    {...the body..., "timestamp": T}  (the timestamp key is removed from the body)

T is Unix seconds (int or float) or an ISO-8601 string (UTC when it has no offset). The API
(shadowreplay.llmapi) comes from "path" when given, else from the body: "messages" is chat (or
Anthropic Messages when it has max_tokens and system/stop_sequences), "prompt" a completion,
"input" with instructions, max_output_tokens or input items a Responses request. prompt_tokens
comes from the record or, failing that, is counted with --tokenizer (the prompt's text pieces
joined); completion_tokens from the record, else the body's output limit (max_completion_tokens /
max_tokens / max_output_tokens)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from shadowreplay import llmapi

from .base import Chunk, Report
from .jsonl import records

FORMAT = "openai-jsonl"
BATCH = 2048


def parse_ts(v) -> int | None:
    """Microseconds since the epoch, or None."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return round(v * 1_000_000)
    if isinstance(v, str):
        try:
            t = dt.datetime.fromisoformat(v.strip().replace("Z", "+00:00"))
        except ValueError:
            return None
        if t.tzinfo is None:
            t = t.replace(tzinfo=dt.timezone.utc)
        return round(t.timestamp() * 1_000_000)
    return None


def prompt_text(body: dict, kind: str | None = None) -> str:
    """The prompt's text pieces joined by newlines (what is tokenized), for the body's API
    (shadowreplay.llmapi; told from the body when kind is None); "" when it has none."""
    api = llmapi.api_for_kind(kind) if kind else llmapi.api_for_body(body)
    return llmapi.prompt_text(api, body, "\n") or ""


def read(path: Path, report: Report, *, tokenizer=None, **_) -> Iterator[Chunk]:
    cols: dict[str, list] = {k: [] for k in ("row", "ts", "pt", "ct", "model", "body", "kind", "id", "text")}

    def flush():
        pt = cols["pt"]
        need = [i for i, v in enumerate(pt) if v is None]
        if need and tokenizer is not None:
            for i, c in zip(need, tokenizer.count([cols["text"][i] for i in need])):
                pt[i] = c
        c = Chunk(row=np.array(cols["row"], dtype=np.int64), ts_us=np.array(cols["ts"], dtype=np.int64),
                  prompt_tokens=np.array([-1 if v is None else v for v in pt], dtype=np.int64),
                  completion_tokens=np.array([-1 if v is None else v for v in cols["ct"]], dtype=np.int64),
                  model=cols["model"], request_body=cols["body"], kind=cols["kind"], request_id=cols["id"])
        for k in cols:
            cols[k] = []
        return c

    for lineno, obj in records(path, report):
        if "body" in obj and isinstance(obj["body"], dict):
            body = obj["body"]
            meta = obj
        else:
            body = {k: v for k, v in obj.items() if k != "timestamp"}
            meta = obj
        ts = parse_ts(meta.get("timestamp"))
        if ts is None:
            report.warn("unparseable", f"{path.name}:{lineno}: skipped, missing or unparseable timestamp {meta.get('timestamp')!r}")
            continue
        rec_path = meta.get("path") if meta is not body else None
        api = llmapi.api_for_path(rec_path) if isinstance(rec_path, str) else llmapi.HTTP
        if api.kind not in llmapi.GENERATIVE_KINDS:
            api = llmapi.api_for_body(body)
        if api.kind not in llmapi.GENERATIVE_KINDS:
            report.warn("unparseable", f"{path.name}:{lineno}: skipped, not a chat, completions, Responses or "
                                       "Messages body (no messages, prompt or input)")
            continue
        kind = api.kind
        pt = meta.get("prompt_tokens") if meta is not body else None
        ct = meta.get("completion_tokens") if meta is not body else None
        if ct is None:
            ct = api.output_limit(body)
        cols["row"].append(lineno)
        cols["ts"].append(ts)
        cols["pt"].append(pt if isinstance(pt, int) else None)
        cols["ct"].append(ct if isinstance(ct, int) and not isinstance(ct, bool) else None)
        cols["model"].append(body.get("model"))
        cols["body"].append(json.dumps(body, ensure_ascii=False, separators=(",", ":")))
        cols["kind"].append(kind)
        rid = meta.get("id") if meta is not body else None
        cols["id"].append(str(rid) if rid is not None else None)
        cols["text"].append(prompt_text(body, kind))
        if len(cols["row"]) >= BATCH:
            yield flush()
    if cols["row"]:
        yield flush()
