"""Pure building of what is replayed: the request body (recorded, scrubbed, with the output-length
fields set) and the request headers (recorded minus credentials and hop-by-hop, plus --header)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from shadowreplay import llmapi
from shadowreplay.errors import ConfigError

from .shape import ShapePrompts

# Never replayed: scrubbed credentials, and headers the replayer sets itself.
DROP_HEADERS = frozenset({
    "authorization", "proxy-authorization", "api-key", "x-api-key", "cookie", "openai-organization",
    "host", "content-length", "connection", "keep-alive", "transfer-encoding", "te", "upgrade",
    "accept-encoding", "expect", "proxy-connection", "trailer",
})


@dataclass(frozen=True)
class BodyOptions:
    model_map: dict[str, str]
    ignore_eos: bool = True
    shape: ShapePrompts | None = None  # prompts for shape rows (record --keep shape), None without any


def parse_model_map(items: list[str] | None) -> dict[str, str]:
    out = {}
    for item in items or []:
        a, sep, b = item.partition("=")
        if not sep or not a.strip() or not b.strip():
            raise ConfigError(f"bad --model-map {item!r}: expected RECORDED=SHADOW")
        out[a.strip()] = b.strip()
    return out


def parse_headers(items: list[str] | None) -> list[tuple[str, str]]:
    out = []
    for item in items or []:
        k, sep, v = item.partition(":")
        if not sep or not k.strip() or any(c in k for c in " \r\n") or "\n" in v or "\r" in v:
            raise ConfigError(f"bad --header {item!r}: expected 'Name: value'")
        out.append((k.strip(), v.strip()))
    return out


def build_body(
    recorded: str | None,
    *,
    kind: str | None,
    stream: bool | None,
    completion_tokens: int | None,
    opts: BodyOptions,
) -> tuple[bytes, str | None]:
    """The body to send and the model it names. Every JSON body gets its model mapped; the bodies
    of the generative APIs (shadowreplay.llmapi: chat, completions, Responses, Messages) get their
    output pinned to the recorded completion tokens in the API's own fields (`pin_output`: for
    chat and completions max_tokens = min_tokens, ignore_eos, stream_options.include_usage; for
    Responses max_output_tokens and vLLM's ignore_eos; for Messages max_tokens). Other bodies
    are sent as recorded."""
    if recorded is None:
        return b"", None
    try:
        obj = json.loads(recorded)
    except ValueError:
        return recorded.encode(), None
    if not isinstance(obj, dict):
        return recorded.encode(), None
    model = obj.get("model")
    if isinstance(model, str) and model in opts.model_map:
        obj["model"] = model = opts.model_map[model]
    api = llmapi.api_for_kind(kind) if kind is not None else llmapi.api_for_body(obj)
    if api.kind in llmapi.GENERATIVE_KINDS:
        api.pin_output(obj, completion_tokens, ignore_eos=opts.ignore_eos, stream=bool(stream or obj.get("stream")))
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode(), model if isinstance(model, str) else None


def build_headers(recorded_json: str | None, extra: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Recorded headers without credentials/hop-by-hop ones, then the --header values (which
    replace recorded headers of the same name)."""
    recorded: dict = {}
    if recorded_json:
        try:
            v = json.loads(recorded_json)
            recorded = v if isinstance(v, dict) else {}
        except ValueError:
            recorded = {}
    override = {k.lower() for k, _ in extra}
    out = []
    for k, v in recorded.items():
        lk = str(k).lower()
        if lk.startswith(":") or lk in DROP_HEADERS or lk in override:
            continue
        vals = v if isinstance(v, list) else [v]
        for one in vals:
            s = str(one)
            if "\r" in s or "\n" in s:
                continue
            out.append((str(k), s))
    out.extend(extra)
    return out


def request_bytes(method: str, path: str, host_header: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
    """A complete HTTP/1.1 request, built once before the replay starts."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host_header}"]
    has_ct = False
    for k, v in headers:
        if k.lower() == "content-type":
            has_ct = True
        lines.append(f"{k}: {v}")
    if body and not has_ct:
        lines.append("Content-Type: application/json")
    if body or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body)}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8")
    return head + body
