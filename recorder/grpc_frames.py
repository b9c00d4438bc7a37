"""gRPC wire framing, pure: the length-prefixed message parser and status/trailer parsing.

A gRPC body (either direction) is a sequence of messages, each prefixed by 5 bytes:
one flag byte (0 = identity, 1 = compressed with the `grpc-encoding` codec) and a 4-byte
big-endian length. HTTP/2 DATA frames split and join these messages arbitrarily, so the
parser is incremental: feed it chunks as they pass, get back the messages completed by each.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

PREFIX_LEN = 5
GRPC_CONTENT_TYPE = "application/grpc"

# https://grpc.github.io/grpc/core/md_doc_statuscodes.html
STATUS_NAMES = (
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
    "UNAUTHENTICATED",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Frame:
    """One gRPC message as it passed the proxy."""

    compressed: bool
    size: int  # payload length from the prefix
    data: bytes | None  # the payload without the prefix; None when over the parser's keep limit
    t: float  # when its last byte passed (epoch seconds): the earliest a peer can decode it


class GrpcFrameParser:
    """Incremental parser of one direction of a gRPC stream.

    `feed(chunk, t)` returns the messages completed by `chunk`. Payloads longer than
    `max_keep` bytes are counted and timed but not kept (`data=None`), so memory stays bounded.
    A malformed prefix (flag byte other than 0/1) sets `error` and stops parsing; the bytes
    still pass through the proxy untouched since the parser only observes."""

    __slots__ = ("max_keep", "_buf", "_need", "_compressed", "_size", "_skip", "error", "bytes_seen")

    def __init__(self, max_keep: int = 4 * 1024 * 1024) -> None:
        self.max_keep = max_keep
        self._buf = bytearray()
        self._need: int | None = None  # payload bytes still expected for the current message
        self._compressed = False
        self._size = 0
        self._skip = False  # current payload is over max_keep: count it, do not keep it
        self.error: str | None = None
        self.bytes_seen = 0

    def feed(self, chunk: bytes, t: float) -> list[Frame]:
        self.bytes_seen += len(chunk)
        if self.error is not None or not chunk:
            return []
        out: list[Frame] = []
        view = memoryview(chunk)
        while view:
            if self._need is None:
                take = min(PREFIX_LEN - len(self._buf), len(view))
                self._buf += view[:take]
                view = view[take:]
                if len(self._buf) < PREFIX_LEN:
                    break
                flag = self._buf[0]
                if flag not in (0, 1):
                    self.error = f"bad gRPC frame flag 0x{flag:02x}"
                    self._buf.clear()
                    return out
                self._compressed = flag == 1
                self._size = int.from_bytes(self._buf[1:5], "big")
                self._need = self._size
                self._skip = self._size > self.max_keep
                self._buf.clear()
            take = min(self._need, len(view))
            if not self._skip:
                self._buf += view[:take]
            view = view[take:]
            self._need -= take
            if self._need == 0:
                data = None if self._skip else bytes(self._buf)
                out.append(Frame(self._compressed, self._size, data, t))
                self._buf.clear()
                self._need = None
        return out

    @property
    def pending(self) -> int:
        """Bytes of an incomplete message held or expected (0 at a clean message boundary)."""
        if self._need is None:
            return len(self._buf)
        return self._size + PREFIX_LEN - self._need

    def finish(self) -> str | None:
        """Call at end of stream: an error text if the stream ended inside a message."""
        if self.error:
            return self.error
        if self._need is not None or self._buf:
            return f"gRPC stream ended inside a message ({self.pending} bytes of it seen)"
        return None


def encode_frame(payload: bytes, compressed: bool = False) -> bytes:
    """The wire form of one message (tests, replay)."""
    return bytes([1 if compressed else 0]) + len(payload).to_bytes(4, "big") + payload


def is_grpc_content_type(content_type: str | None) -> bool:
    return bool(content_type) and content_type.lower().startswith(GRPC_CONTENT_TYPE)


@dataclass(frozen=True, slots=True)
class GrpcStatus:
    code: int | None  # None when the stream ended without grpc-status
    message: str | None  # grpc-message, percent-decoded

    @property
    def name(self) -> str | None:
        if self.code is None:
            return None
        return STATUS_NAMES[self.code] if 0 <= self.code < len(STATUS_NAMES) else str(self.code)


def parse_status(*header_sets: Iterable[tuple[str, str]] | Mapping[str, str] | None) -> GrpcStatus:
    """grpc-status/grpc-message from trailers, or from the headers of a trailers-only response.

    Later sets win (pass headers first, then trailers)."""
    code: int | None = None
    message: str | None = None
    for hs in header_sets:
        if not hs:
            continue
        items = hs.items() if isinstance(hs, Mapping) else hs
        for k, v in items:
            k = k.lower()
            if k == "grpc-status":
                try:
                    code = int(v.strip())
                except ValueError:
                    code = None
            elif k == "grpc-message":
                message = urllib.parse.unquote(v)
    return GrpcStatus(code, message)


def split_path(path: str) -> tuple[str | None, str | None]:
    """'/pkg.Service/Method' -> ('pkg.Service', 'Method'); anything else -> (None, None)."""
    p = path.split("?", 1)[0]
    parts = p.split("/")
    if len(parts) == 3 and parts[0] == "" and parts[1] and parts[2]:
        return parts[1], parts[2]
    return None, None
