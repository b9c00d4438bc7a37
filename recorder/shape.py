"""`--keep shape`: what a recording keeps of a request when it may keep no text at all.

Built in the writer, in memory, from the parsed raw body: lengths, message structure (roles, part
types, keyed hashes of tool names), prefix-block hash ids, a coarse language and content type.
Every value is a number, a keyed hash, or a word of a fixed vocabulary: nothing of the traffic's
text is copied, not even scrubbed.

Prefix blocks: the prompt text (`llmapi.prompt_text`, the messages' text joined) is cut into
blocks of `block_chars` characters; block i's id is a keyed chain hash of blocks 0..i (63 bits of
an HMAC-SHA256 under the scrub key), so two prompts that share their first k full blocks share
their first k ids and nothing else; the last, partial block is hashed with its length.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from shadowreplay import llmapi

if TYPE_CHECKING:
    from shadowreplay.anonymize import Scrubber

KEEP_MODES = ("text", "shape")
BLOCK_CHARS = 64  # default prefix block (characters) of hash_ids in shape rows
ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
_WORD = re.compile(r"[a-z_]{1,32}")  # a part type kept as is; anything else becomes "other"
_MASK63 = (1 << 63) - 1

# Coarse content type: JSON (the whole text parses as an object or array), code (enough lines
# that look like source), else natural language.
_CODE_LINE = re.compile(
    r"^\s*(?:def |class |import |from \S+ import |function |const |let |var |return\b|if \(|for \(|#include|"
    r"public |private |package |fn |func |SELECT |\}|\{|@\w+)|[;{}]\s*$|=>|^\s*```"
)


def block_hash_ids(scrubber: Scrubber, text: str, block_chars: int = BLOCK_CHARS) -> list[int]:
    """Keyed chain hashes of the cumulative prefix blocks of text (see the module doc)."""
    out: list[int] = []
    prev = ""
    for s in range(0, len(text), block_chars):
        block = text[s : s + block_chars]
        prev = scrubber.keyed_hash(f"shape-block\0{len(block)}\0{prev}\0{block}")
        out.append(int(prev, 16) & _MASK63)
    return out


def language(text: str) -> str | None:
    """A coarse language from the letters' scripts: zh, ja, ko, ru (Cyrillic), ar, he, hi
    (Devanagari), th, el, en (Latin letters with English function words), latin (other Latin
    script); None without letters. Looks at the first 4,000 characters."""
    sample = text[:4000]
    if sample.isascii():  # the common case: one scan instead of one per script
        counts = {"latin": len(_ASCII_LETTER.findall(sample)), "kana": 0}
    else:
        counts = {name: len(rx.findall(sample)) for name, rx in _SCRIPTS}
    if not any(counts.values()):
        return None
    if counts["kana"] * 10 >= sum(counts.values()):
        return "ja"
    top = max(counts, key=lambda k: counts[k])
    if top == "kana":
        return "ja"
    if top == "latin":
        words = _LATIN_WORD.findall(sample[:1000].lower())
        hits = sum(1 for w in words if w in _EN_WORDS)
        return "en" if words and hits * 8 >= len(words) else "latin"
    return top


_SCRIPTS = tuple((k, re.compile(v)) for k, v in (
    ("latin", "[A-Za-z\u00c0-\u024f]"), ("zh", "[\u4e00-\u9fff\u3400-\u4dbf]"), ("kana", "[\u3040-\u30ff]"),
    ("ko", "[\uac00-\ud7af\u1100-\u11ff]"), ("ru", "[\u0400-\u04ff]"), ("ar", "[\u0600-\u06ff]"),
    ("he", "[\u0590-\u05ff]"), ("hi", "[\u0900-\u097f]"), ("th", "[\u0e00-\u0e7f]"), ("el", "[\u0370-\u03ff]"),
))
_LATIN_WORD = re.compile(r"[a-z]+")
_ASCII_LETTER = re.compile(r"[A-Za-z]")
_EN_WORDS = frozenset("the a an and or of to in is are was be it that this for on with as at by from you i we "
                      "not what how can do please my your".split())


def content_type(text: str) -> str | None:
    """"json", "code" or "text" (natural language); None for an empty text."""
    t = text.strip()
    if not t:
        return None
    if t[:1] in "{[" and t[-1:] in "}]":
        try:
            json.loads(t)
            return "json"
        except ValueError:
            pass
    lines = [ln for ln in t.splitlines() if ln.strip()]
    code = sum(1 for ln in lines if _CODE_LINE.search(ln))
    return "code" if code >= 2 and code * 4 >= len(lines) else "text"


def _role(v: Any) -> str:
    return v if isinstance(v, str) and v in ROLES else "other"


def _part_type(v: Any) -> str:
    return v if isinstance(v, str) and _WORD.fullmatch(v) else "other"


def _tool_id(scrubber: Scrubber, name: Any) -> str:
    return "t_" + scrubber.keyed_hash("tool\0" + str(name))[:12]


def _parts(content: Any) -> list[str]:
    if isinstance(content, str):
        return ["text"]
    if isinstance(content, list):
        return [_part_type(p.get("type")) if isinstance(p, dict) else "text" for p in content]
    return []


def _tool_names(scrubber: Scrubber, calls: Any) -> list[str]:
    out = []
    for c in calls if isinstance(calls, list) else []:
        if isinstance(c, dict):
            fn = c.get("function") if isinstance(c.get("function"), dict) else c
            if fn.get("name") is not None:
                out.append(_tool_id(scrubber, fn.get("name")))
    return out


def structure(body: dict, api: llmapi.LlmApi, scrubber: Scrubber) -> dict[str, Any]:
    """The message structure of a request body: per message its role, characters, part types and
    (keyed) called tool names; the declared tools' keyed names. Numbers and vocabulary only."""
    out: dict[str, Any] = {}
    msgs = body.get("messages")
    if isinstance(msgs, list):
        shaped = []
        for m in msgs:
            if not isinstance(m, dict):
                shaped.append({"role": "other"})
                continue
            one: dict[str, Any] = {"role": _role(m.get("role")), "chars": len(llmapi.prompt_text(llmapi.CHAT, {"messages": [m]}) or "")}
            parts = _parts(m.get("content"))
            if parts:
                one["parts"] = parts
            calls = _tool_names(scrubber, m.get("tool_calls"))
            if calls:
                one["tool_calls"] = calls
            shaped.append(one)
        out["messages"] = shaped
    else:
        parts = api.prompt_parts(body)
        if parts is not None:
            out["prompt"] = [len(p) for p in parts]
    tools = _tool_names(scrubber, body.get("tools"))
    if tools:
        out["tools"] = tools
    return out


def request_columns(body: dict, api: llmapi.LlmApi, text: str | None, scrubber: Scrubber,
                    block_chars: int = BLOCK_CHARS) -> dict[str, Any]:
    """The shape columns of one parsed request body (text: its prompt text, if any)."""
    cols: dict[str, Any] = {"message_shape": json.dumps(structure(body, api, scrubber), separators=(",", ":"))}
    if text is not None:
        cols["hash_ids"] = block_hash_ids(scrubber, text, block_chars)
        cols["hash_block_chars"] = block_chars
        cols["language"] = language(text)
        cols["content_type"] = content_type(text)
    return cols


# Request headers whose values are a protocol vocabulary; every other header keeps its name only.
_STRUCTURAL_HEADERS = frozenset({"content-type", "accept", "content-encoding", "accept-encoding", "grpc-status",
                                 "grpc-encoding", "grpc-accept-encoding", "te"})
_HEADER_VALUE = re.compile(r"[A-Za-z0-9/+.*_=;, -]{0,80}")


def header_names(headers: list[tuple[str, str]]) -> str:
    """Request headers for a shape row: names, with values only for content-type/accept/encoding
    headers whose value is a plain media-type list; other values are empty."""
    out: dict[str, str] = {}
    for k, v in headers:
        lk = k.lower()
        keep = lk in _STRUCTURAL_HEADERS and _HEADER_VALUE.fullmatch(v or "") is not None
        out[lk] = v if keep else ""
    return json.dumps(out, sort_keys=True)


def bare_path(path: str | None) -> str | None:
    """The path without its query string or fragment."""
    if path is None:
        return None
    return path.split("?", 1)[0].split("#", 1)[0]


def grpc_shape(row: dict[str, Any], request_headers: list[tuple[str, str]],
               trailers: list[tuple[str, str]] | None) -> None:
    """A gRPC row made a shape row, in place: message sizes and times stay, their payloads, the
    user agent, header and trailer values and the path's query go (such a row is not replayable)."""
    row["user_agent"] = None
    row["path"] = bare_path(row.get("path"))
    row["request_headers"] = header_names(request_headers)
    row["grpc_trailers"] = header_names(trailers) if trailers is not None else None
    row["grpc_messages"] = [dict(m, data=None) for m in row.get("grpc_messages") or []]
    row["pii_counts"] = None
