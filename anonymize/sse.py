"""Server-sent-event bodies (streamed OpenAI/vLLM responses).

A streamed answer arrives a token or two per event, so an e-mail address or a phone number is
split across many `data:` chunks and no chunk alone shows it. The streamed text fields (delta
content, reasoning, completions text, tool-call argument fragments, Responses API deltas) are
therefore joined per stream, scrubbed as one text, and cut back at the original chunk
boundaries; substitutes keep the length, so every chunk keeps its length too."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .scrubber import Scrubber

Path = tuple[Any, ...]


def _stream_fields(chunk: Any) -> list[tuple[tuple, Path]]:
    """(stream id, path) of every streamed text fragment in one parsed chunk."""
    out: list[tuple[tuple, Path]] = []
    if not isinstance(chunk, dict):
        return out
    choices = chunk.get("choices")
    if isinstance(choices, list):
        for ci, choice in enumerate(choices):
            if not isinstance(choice, dict):
                continue
            idx = choice.get("index", ci)
            if isinstance(choice.get("text"), str):
                out.append((("text", idx), ("choices", ci, "text")))
            delta = choice.get("delta")
            if isinstance(delta, dict):
                for field in ("content", "reasoning_content", "reasoning", "refusal"):
                    if isinstance(delta.get(field), str):
                        out.append(((field, idx), ("choices", ci, "delta", field)))
                calls = delta.get("tool_calls")
                if isinstance(calls, list):
                    for ti, call in enumerate(calls):
                        fn = call.get("function") if isinstance(call, dict) else None
                        if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                            tidx = call.get("index", ti)
                            out.append((("args", idx, tidx), ("choices", ci, "delta", "tool_calls", ti, "function", "arguments")))
    typ = chunk.get("type")
    if isinstance(typ, str) and typ.endswith(".delta") and isinstance(chunk.get("delta"), str):
        out.append((("resp", typ, chunk.get("item_id"), chunk.get("output_index"), chunk.get("content_index")), ("delta",)))
    return out


def _get(obj: Any, path: Path) -> Any:
    for p in path:
        obj = obj[p]
    return obj


def _set(obj: Any, path: Path, value: Any) -> None:
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value


def scrub_sse(scrubber: "Scrubber", text: str) -> tuple[str, dict[str, int]]:
    from .scrubber import _merge, _separators

    lines = text.splitlines(keepends=True)
    counts: dict[str, int] = {}
    parsed: dict[int, tuple[str, Any, str, tuple[str, str]]] = {}  # line -> (prefix, chunk, newline, separators)
    streams: dict[tuple, list[tuple[int, Path, str]]] = {}
    for i, line in enumerate(lines):
        if not line.startswith("data:"):
            continue
        body = line.rstrip("\r\n")
        newline = line[len(body) :]
        payload = body[5:]
        prefix = "data:" + (" " if payload.startswith(" ") else "")
        payload = payload[len(prefix) - 5 :]
        if not payload.startswith(("{", "[")):
            continue
        try:
            chunk = json.loads(payload)
        except (ValueError, RecursionError):
            continue
        for sid, path in _stream_fields(chunk):
            streams.setdefault(sid, []).append((i, path, _get(chunk, path)))
            _set(chunk, path, "")  # scrubbed with its stream below, not alone
        parsed[i] = (prefix, chunk, newline, _separators(payload))
    scrubbed_chunks: dict[int, Any] = {}
    for i, (prefix, chunk, newline, seps) in parsed.items():
        out, c = scrubber._scrub_tree(chunk, inplace=True)
        _merge(counts, c)
        scrubbed_chunks[i] = out
    for pieces in streams.values():
        r = scrubber.scrub_text("".join(p[2] for p in pieces))
        _merge(counts, r.counts)
        pos = 0
        for i, path, original in pieces:
            _set(scrubbed_chunks[i], path, r.text[pos : pos + len(original)])
            pos += len(original)
    out_lines = []
    for i, line in enumerate(lines):
        if i in parsed:
            prefix, _, newline, seps = parsed[i]
            out_lines.append(prefix + json.dumps(scrubbed_chunks[i], ensure_ascii=False, separators=seps) + newline)
        else:
            r = scrubber.scrub_text(line)
            _merge(counts, r.counts)
            out_lines.append(r.text)
    return "".join(out_lines), counts
