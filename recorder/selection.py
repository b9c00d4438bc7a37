"""Which exchanges the recorder keeps: filters and sampling, decided in the proxy before anything
is parsed, scrubbed or queued (an exchange left out costs a few dict look-ups and, when sampling
by conversation, one JSON parse of the request body).

Filters: include / exclude by path (a glob on the path without its query; `*` also matches `/`),
host (a glob, case-insensitive, port ignored), header (`NAME=REGEX`, searched in each value of
that header) and client (a `client_id` as recorded, `c_...`, or an IP address / network of the
client). Patterns of one kind are alternatives; each kind that has include patterns must match.
Health checks, `/metrics` and model listings (`DEFAULT_EXCLUDED_PATHS`) are left out unless an
include pattern names them.

Sampling: a keyed hash (anonymize/keyedhash.py, under the scrub key) of the sampling key gives
each exchange a number in [0, 1); it is kept when that number is below the rate. The same key
gives the same decision in every recorder of a fleet and every recording, and a 10 % sample is
part of the 20 % one. Keys (`SAMPLE_BY`):
- `conversation` (the default): the session header's value when the request has it (default
  `x-session-id`); else, for a body with `messages` (chat, Anthropic messages) or a list `input`
  (Responses), the messages up to the first user message with the system prompt / instructions
  (what every later turn of the conversation repeats); else the first `prefix_chars` characters of
  a `prompt` / string `input` (what `prefix_hash` covers); else the request itself.
- `client`: what `client_id` is derived from (the credential, else the client address).
- `request`: each exchange on its own.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from shadowreplay.errors import ConfigError

if TYPE_CHECKING:
    from shadowreplay.anonymize.keyedhash import KeyedIds

SAMPLE_BY = ("conversation", "client", "request")
DEFAULT_EXCLUDED_PATHS = (
    "/health", "/health/*", "/healthz", "/ready", "/readyz", "/live", "/livez", "/ping", "/metrics",
    "/version", "/models", "/v1/models",
)
# what `decide` answers for an exchange left out (the `reason` label of the filtered metric)
FILTER_REASONS = ("path", "host", "header", "client", "default")
SAMPLED_OUT = "sampled"


def _globs(patterns: Sequence[str], fold: bool = False) -> re.Pattern | None:
    """One compiled regex matching any of the globs (None for none)."""
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(p.lower() if fold else p)})" for p in patterns))


_DEFAULT_EXCLUDED = _globs(DEFAULT_EXCLUDED_PATHS)


def parse_rate(text: str, label: str = "--sample") -> float:
    """`10%`, `0.5%` or a fraction `0.1` -> 0.1; must be > 0 and at most 100 %."""
    t = str(text).strip()
    try:
        rate = float(t[:-1]) / 100.0 if t.endswith("%") else float(t)
    except ValueError:
        raise ConfigError(f"{label} {text!r}: a percentage (10%) or a fraction (0.1)") from None
    if not 0.0 < rate <= 1.0:
        raise ConfigError(f"{label} {text!r}: must be more than 0 and at most 100%")
    return rate


def format_rate(rate: float) -> str:
    return f"{rate * 100:g}%"


def parse_header_rule(text: str, label: str = "--include-header") -> tuple[str, re.Pattern]:
    name, eq, pattern = text.partition("=")
    if not eq or not name.strip():
        raise ConfigError(f"{label} {text!r}: NAME=REGEX, e.g. x-tenant=^team-a")
    try:
        return name.strip().lower(), re.compile(pattern)
    except re.error as e:
        raise ConfigError(f"{label} {text!r}: bad regular expression ({e})") from None


def _parse_client(text: str, label: str) -> str | ipaddress.IPv4Network | ipaddress.IPv6Network:
    t = text.strip()
    if t.startswith("c_"):
        return t
    try:
        return ipaddress.ip_network(t, strict=False)
    except ValueError:
        raise ConfigError(f"{label} {text!r}: a client_id (c_...) or an IP address / network (10.0.0.0/8)") from None


@dataclass
class Request:
    """What the decision reads of one exchange (references, nothing copied)."""

    path: str | None
    host: str | None
    headers: Any  # (name, value) pairs, or mitmproxy's Headers (read without copying)
    client_addr: str | None
    request_id: str
    body: bytes | None = None

    def header_values(self, name: str) -> list[str]:
        h = self.headers
        if hasattr(h, "get_all"):
            return h.get_all(name)
        return [v for k, v in h if k.lower() == name]

    def header_pairs(self) -> list[tuple[str, str]]:
        h = self.headers
        return list(h.items(multi=True)) if hasattr(h, "items") else list(h)


@dataclass
class Selection:
    """The filters and the sampler, from the recorder's option values."""

    include_path: Sequence[str] = ()
    exclude_path: Sequence[str] = ()
    include_host: Sequence[str] = ()
    exclude_host: Sequence[str] = ()
    include_header: Sequence[str] = ()
    exclude_header: Sequence[str] = ()
    include_client: Sequence[str] = ()
    exclude_client: Sequence[str] = ()
    rate: float = 1.0
    by: str = "conversation"
    session_header: str = ""
    prefix_chars: int = 1000
    ids: KeyedIds | None = None  # under the scrub key; needed to sample or to match client ids
    _rules: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.by not in SAMPLE_BY:
            raise ConfigError(f"--sample-by {self.by!r}: one of {', '.join(SAMPLE_BY)}")
        r = self._rules
        r["inc_header"] = [parse_header_rule(t, "--include-header") for t in self.include_header]
        r["exc_header"] = [parse_header_rule(t, "--exclude-header") for t in self.exclude_header]
        r["inc_client"] = [_parse_client(t, "--include-client") for t in self.include_client]
        r["exc_client"] = [_parse_client(t, "--exclude-client") for t in self.exclude_client]
        r["inc_path"], r["exc_path"] = _globs(self.include_path), _globs(self.exclude_path)
        r["inc_host"], r["exc_host"] = _globs(self.include_host, fold=True), _globs(self.exclude_host, fold=True)
        self.session_header = self.session_header.strip().lower()

    @classmethod
    def of(cls, v: Any) -> "Selection":
        """From the recorder's checked option values ({name: value}, `sample` a rate); no key yet."""
        return cls(
            include_path=v["include_path"], exclude_path=v["exclude_path"], include_host=v["include_host"],
            exclude_host=v["exclude_host"], include_header=v["include_header"], exclude_header=v["exclude_header"],
            include_client=v["include_client"], exclude_client=v["exclude_client"], rate=v["sample"],
            by=v["sample_by"], session_header=v["session_header"], prefix_chars=v["prefix_chars"],
        )  # fmt: skip

    @property
    def needs_key(self) -> bool:
        """Whether deciding needs the scrub key (sampling, or a client given by its client_id)."""
        by_id = any(isinstance(c, str) for c in self._rules["inc_client"] + self._rules["exc_client"])
        return self.rate < 1.0 or by_id

    @property
    def sampling(self) -> bool:
        return self.rate < 1.0

    def file_metadata(self) -> dict[str, str]:
        """What each Parquet file says about the sample (read by `analyze`)."""
        return {"recorder.sample_rate": repr(self.rate), "recorder.sample_by": self.by if self.sampling else "all"}

    # --- the decision ---
    def decide(self, req: Request) -> str | None:
        """None to record the exchange; else why not: a FILTER_REASONS word or SAMPLED_OUT."""
        why = self._filtered(req)
        if why is not None:
            return why
        if self.rate < 1.0 and not self._sampled(req):
            return SAMPLED_OUT
        return None

    def _filtered(self, req: Request) -> str | None:
        path = (req.path or "").split("?", 1)[0]
        r = self._rules
        if r["inc_path"] is not None:
            if not r["inc_path"].match(path):
                return "path"
        elif _DEFAULT_EXCLUDED.match(path):
            return "default"
        if r["exc_path"] is not None and r["exc_path"].match(path):
            return "path"
        if r["inc_host"] is not None or r["exc_host"] is not None:
            host = _bare_host(req.host)
            if r["inc_host"] is not None and not r["inc_host"].match(host):
                return "host"
            if r["exc_host"] is not None and r["exc_host"].match(host):
                return "host"
        if r["inc_header"] and not any(_header_matches(req, n, rx) for n, rx in r["inc_header"]):
            return "header"
        if any(_header_matches(req, n, rx) for n, rx in r["exc_header"]):
            return "header"
        if r["inc_client"] and not any(self._client_matches(req, c) for c in r["inc_client"]):
            return "client"
        if any(self._client_matches(req, c) for c in r["exc_client"]):
            return "client"
        return None

    def _client_matches(self, req: Request, spec: Any) -> bool:
        if isinstance(spec, str):
            return self.ids is not None and self.ids.client_id(_client_source(req)) == spec
        try:
            return req.client_addr is not None and ipaddress.ip_address(req.client_addr) in spec
        except ValueError:
            return False

    def _sampled(self, req: Request) -> bool:
        assert self.ids is not None, "sampling needs the scrub key"
        if self.by == "client":
            domain, value = b"client", _client_source(req).encode("utf-8", "surrogatepass")
        else:
            key = conversation_key(req, self.session_header, self.prefix_chars) if self.by == "conversation" else None
            if key is None:
                domain, value = b"request", req.request_id.encode()
            else:
                domain, value = b"conversation", key
        return self.ids.fraction(b"sample\0" + domain, value) < self.rate


def _bare_host(host: str | None) -> str:
    h = (host or "").lower()
    if h.startswith("["):  # [v6]:port
        return h[1:].split("]", 1)[0]
    if h.count(":") == 1:
        return h.split(":", 1)[0]
    return h


def _header_matches(req: Request, name: str, rx: re.Pattern) -> bool:
    return any(rx.search(v) for v in req.header_values(name))


def _client_source(req: Request) -> str:
    """What client_id is derived from (recorder/exchange.py): the credential, else the address."""
    from .exchange import credential

    cred = credential(req.header_pairs())
    return cred if cred else (req.client_addr or "unknown")


def conversation_key(req: Request, session_header: str, prefix_chars: int) -> bytes | None:
    """The part of a request that every turn of its conversation shares (module docstring), or
    None when there is none to find."""
    if session_header:
        for v in req.header_values(session_header):
            if v.strip():
                return b"session\0" + v.strip().encode("utf-8", "surrogatepass")
    body = req.body
    if not body:
        return None
    enc = next((v for v in req.header_values("content-encoding") if v.strip().lower() != "identity"), None)
    if enc:
        from .sse import decode_body

        try:
            body = decode_body(body, enc)
        except ValueError:
            return None
    import orjson

    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, dict):
        return None
    for name in ("messages", "input"):
        msgs = doc.get(name)
        if isinstance(msgs, list) and msgs:
            first = []
            for m in msgs:
                first.append(m)
                if isinstance(m, dict) and m.get("role") == "user":
                    break
            head = [doc.get("system"), doc.get("instructions"), first]
            try:
                return b"messages\0" + orjson.dumps(head, option=orjson.OPT_SORT_KEYS)
            except TypeError:
                return None
    for name in ("prompt", "input"):
        p = doc.get(name)
        if isinstance(p, list) and p and isinstance(p[0], str):
            p = p[0]
        if isinstance(p, str) and p:
            return b"prompt\0" + p[:prefix_chars].encode("utf-8", "surrogatepass")
        if isinstance(p, list) and p:
            return b"tokens\0" + orjson.dumps(p[:prefix_chars])
    return None
