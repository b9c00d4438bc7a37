"""Server-sent-event bodies (streamed OpenAI/vLLM responses).

A streamed answer arrives a token or two per event, so an e-mail address or a phone number is
split across many `data:` chunks and no chunk alone shows it. The streamed text fields of every
API (shadowreplay.llmapi.stream_text_paths: chat delta content, reasoning and tool-call argument
fragments, completions text, Responses deltas, Messages text/thinking/partial_json deltas) are
therefore joined per stream, scrubbed as one text, and cut back at the original chunk
boundaries; substitutes keep the length, so every chunk keeps its length too."""

from __future__ import annotations

import json
from typing import Any

from shadowreplay.llmapi import split_data_line, stream_text_paths

from .bodykeys import merge_counts as _merge, separators as _separators
from .results import BodyScrubber


Path = tuple[Any, ...]


def _get(obj: Any, path: Path) -> Any:
    for p in path:
        obj = obj[p]
    return obj


def _set(obj: Any, path: Path, value: Any) -> None:
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value


def scrub_sse(scrubber: BodyScrubber, text: str) -> tuple[str, dict[str, int]]:
    lines = text.splitlines(keepends=True)
    counts: dict[str, int] = {}
    parsed: dict[int, tuple[str, Any, str, tuple[str, str]]] = {}  # line -> (prefix, chunk, newline, separators)
    streams: dict[tuple, list[tuple[int, Path, str]]] = {}
    for i, line in enumerate(lines):
        body = line.rstrip("\r\n")
        field = split_data_line(body)
        if field is None:
            continue
        newline = line[len(body) :]
        prefix, payload = field
        if not payload.startswith(("{", "[")):
            continue
        try:
            chunk = json.loads(payload)
        except (ValueError, RecursionError):
            continue
        for sid, path in stream_text_paths(chunk):
            streams.setdefault(sid, []).append((i, path, _get(chunk, path)))
            _set(chunk, path, "")  # scrubbed with its stream below, not alone
        parsed[i] = (prefix, chunk, newline, _separators(payload))
    scrubbed_chunks: dict[int, Any] = {}
    for i, (prefix, chunk, newline, seps) in parsed.items():
        out, c = scrubber.scrub_tree(chunk, inplace=True)
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
