"""A real grpcio LLM-like server for the recorder's gRPC tests.

Service `llm.Llm` (tests/protos/llm_test.proto):
- `Generate(GenerateRequest) returns (stream GenerateResponse)`: streams `max_tokens` messages
  `gap_ms` apart; the first echoes the prompt (so PII travels in responses too). A prompt
  containing "NOTFOUND" aborts with NOT_FOUND (its message names the user). When the server's
  `gate` is set, it waits for that event after the first message: a client can prove the proxy
  passes messages through unbuffered by setting it only once it has the first message.
- `CountTokens(CountRequest) returns (CountResponse)`: unary.

The _pb2 modules are generated with grpcio-tools on first use into a temporary folder.
"""

from __future__ import annotations

import importlib
import sys
import tempfile
import threading
import time
from concurrent import futures
from pathlib import Path
from types import ModuleType

import grpc

PROTO = Path(__file__).resolve().parent / "protos" / "llm_test.proto"
SERVICE = "llm.Llm"
_gen_lock = threading.Lock()
_modules: tuple[ModuleType, ModuleType] | None = None


def load_protos() -> tuple[ModuleType, ModuleType]:
    """(llm_test_pb2, llm_test_pb2_grpc), generated from the .proto on first call."""
    global _modules
    with _gen_lock:
        if _modules is None:
            from grpc_tools import protoc

            out = Path(tempfile.mkdtemp(prefix="llm_pb2_"))
            include = Path(protoc.__file__).parent / "_proto"
            rc = protoc.main(
                [
                    "protoc",
                    f"-I{PROTO.parent}",
                    f"-I{include}",
                    f"--python_out={out}",
                    f"--grpc_python_out={out}",
                    str(PROTO),
                ]
            )
            if rc != 0:
                raise RuntimeError(f"protoc failed ({rc}) on {PROTO}")
            sys.path.insert(0, str(out))
            _modules = (importlib.import_module("llm_test_pb2"), importlib.import_module("llm_test_pb2_grpc"))
    return _modules


class LlmServicer:
    def __init__(self, pb2: ModuleType) -> None:
        self.pb2 = pb2
        self.gate: threading.Event | None = None
        self.gate_timeout = 10.0
        self.gate_passed: bool | None = None
        self.sent_at: list[list[float]] = []  # per Generate call: when each message was yielded

    def Generate(self, request, context):
        if "NOTFOUND" in request.prompt:
            context.abort(grpc.StatusCode.NOT_FOUND, f"no model for user {request.user}")
        context.set_trailing_metadata((("x-served-by", "tiny-llm"), ("x-completion-count", str(request.max_tokens))))
        times: list[float] = []
        self.sent_at.append(times)
        gap = request.gap_ms / 1000.0
        for i in range(request.max_tokens):
            if i == 1 and self.gate is not None:
                self.gate_passed = self.gate.wait(self.gate_timeout)
                if not self.gate_passed:
                    context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "client never got the first message")
            elif i > 0 and gap:
                time.sleep(gap)
            text = f"You said: {request.prompt}" if i == 0 else f" tok{i}"
            last = i == request.max_tokens - 1
            times.append(time.time())
            yield self.pb2.GenerateResponse(
                text=text, token_id=1000 + i, index=i, finish_reason="length" if last else ""
            )

    def CountTokens(self, request, context):
        return self.pb2.CountResponse(tokens=len(request.text.split()), echo=request.text)


class LlmServer:
    """A started grpcio server on 127.0.0.1 (h2c, or TLS when given a key and certificate)."""

    def __init__(self, *, tls: tuple[bytes, bytes] | None = None) -> None:
        self.pb2, self.pb2_grpc = load_protos()
        self.servicer = LlmServicer(self.pb2)
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        self.pb2_grpc.add_LlmServicer_to_server(self.servicer, self.server)
        if tls:
            creds = grpc.ssl_server_credentials([tls])
            self.port = self.server.add_secure_port("127.0.0.1:0", creds)
        else:
            self.port = self.server.add_insecure_port("127.0.0.1:0")
        if not self.port:
            raise RuntimeError("grpc server could not bind")
        self.server.start()

    def stop(self) -> None:
        self.server.stop(grace=None)

    def __enter__(self) -> LlmServer:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


if __name__ == "__main__":  # manual use: python tests/grpc_llm_server.py
    s = LlmServer()
    print(f"llm.Llm listening on 127.0.0.1:{s.port}", flush=True)
    s.server.wait_for_termination()
