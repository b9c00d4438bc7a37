"""Replaying recorded gRPC calls with grpcio generic stubs (no generated code).

The recorded request frames (`grpc_messages` with direction='request'; `data` is the scrubbed
protobuf payload without the 5-byte gRPC prefix) are sent as-is with identity serializers.
One request message goes out as a unary-request call read as a response stream (on the wire a
unary call and a server-streaming call are the same, so this serves both); several go out as a
stream-stream call. Time to first message and the gaps between messages are measured.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from shadowreplay.errors import ConfigError

from .routes import Target


@dataclass(frozen=True)
class GrpcCall:
    method: str  # /package.Service/Method
    messages: tuple[bytes, ...]
    metadata: tuple[tuple[str, str], ...]


def build_call(service: str | None, method: str | None, path: str | None, frames, extra_headers) -> GrpcCall | None:
    """The call to replay, or None when the row lacks what a gRPC replay needs."""
    if service and method:
        full = f"/{service}/{method}"
    elif path and path.count("/") >= 2:
        full = path
    else:
        return None
    msgs = tuple(bytes(f["data"]) for f in (frames or ()) if f and f.get("direction") == "request" and f.get("data") is not None)
    if not msgs:
        return None
    md = tuple((k.lower(), v) for k, v in extra_headers)
    return GrpcCall(full, msgs, md)


class GrpcResult:
    __slots__ = ("sent_ns", "first_ns", "end_ns", "msg_ns", "code", "error")

    def __init__(self) -> None:
        self.sent_ns = 0
        self.first_ns = 0
        self.end_ns = 0
        self.msg_ns: list[int] = []
        self.code: int | None = None
        self.error: str | None = None


class GrpcChannels:
    """One grpc.aio channel per target (made lazily, inside the running loop)."""

    def __init__(self) -> None:
        self._ch: dict[str, object] = {}

    def channel(self, target: Target):
        import grpc

        ch = self._ch.get(target.url)
        if ch is None:
            if target.scheme == "https":
                ch = grpc.aio.secure_channel(target.hostport, grpc.ssl_channel_credentials())
            else:
                ch = grpc.aio.insecure_channel(target.hostport)
            self._ch[target.url] = ch
        return ch

    async def call(self, target: Target, call: GrpcCall, timeout: float, res: GrpcResult) -> None:
        import grpc

        ch = self.channel(target)
        try:
            res.sent_ns = time.monotonic_ns()
            if len(call.messages) == 1:
                rpc = ch.unary_stream(call.method, request_serializer=None, response_deserializer=None)(
                    call.messages[0], metadata=call.metadata or None, timeout=timeout)
            else:
                rpc = ch.stream_stream(call.method, request_serializer=None, response_deserializer=None)(
                    iter(call.messages), metadata=call.metadata or None, timeout=timeout)
            async for _ in rpc:
                now = time.monotonic_ns()
                if not res.first_ns:
                    res.first_ns = now
                res.msg_ns.append(now)
            code = await rpc.code()
            res.code = code.value[0]
        except grpc.aio.AioRpcError as e:
            res.code = e.code().value[0]
            res.error = f"grpc {e.code().name}: {e.details()}"
        except Exception as e:  # a broken target must become a row, not a crash
            res.error = f"grpc: {e.__class__.__name__}: {e}"
        res.end_ns = time.monotonic_ns()

    async def close(self) -> None:
        for ch in self._ch.values():
            await ch.close()
        self._ch.clear()


def check_grpc_target(target: Target) -> None:
    if target.base_path:
        raise ConfigError(f"gRPC target {target.url} must not have a path")
