"""The shared real engines of a test session, started in the background.

A vLLM start costs one to five minutes on a 2-core machine, so every test that only sends an
engine requests shares one of these, and each engine a collected test needs starts as soon as
collection ends, while the tests that need no engine run (conftest.py orders those first).
Tests of an engine's lifecycle (`shadow up/down`, the demo) start their own.

- `tiny_vllm`: vLLM's OpenAI server with the tiny model, prefix caching in blocks of 32 tokens
  and the dev endpoints (`reset_prefix_cache()` before a test that measures caching);
- `vllm_grpc`: vLLM's own gRPC server (`vllm.entrypoints.grpc_server`) with the tiny model.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from shadowreplay.ports import free_port

REPO = Path(__file__).resolve().parent.parent
READY_TIMEOUT_S = 900.0  # a start is 60-90 s alone, several minutes while the other tests run


class EngineUnavailable(Exception):
    """The engine could not be started (the message says why); its tests fail with it."""


def vllm_python_path() -> Path | None:
    """The vLLM venv's Python, or None when SHADOWREPLAY_SKIP_VLLM=1."""
    if os.environ.get("SHADOWREPLAY_SKIP_VLLM") == "1":
        return None
    return Path(os.environ.get("SHADOWREPLAY_VLLM_PYTHON", REPO / ".venv-vllm" / "bin" / "python"))


class BackgroundEngine:
    """Starts `launch()` in a thread at once; `get()` waits for it and returns its value."""

    def __init__(self, name: str, launch: Callable[[], tuple[Any, Callable[[], None]]]):
        self.name = name
        self._launch = launch
        self._value: Any = None
        self._stop: Callable[[], None] | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"engine-{name}", daemon=True)
        self.started_at = time.monotonic()
        self.ready_after_s: float | None = None
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value, self._stop = self._launch()
            self.ready_after_s = time.monotonic() - self.started_at
        except BaseException as e:  # reported to every test that asks for the engine
            self._error = e

    def get(self) -> Any:
        self._thread.join()
        if self._error is not None:
            raise EngineUnavailable(f"{self.name}: {self._error}") from self._error
        return self._value

    def stop(self) -> None:
        self._thread.join()
        stop, self._stop = self._stop, None
        if stop is not None:
            stop()


def _tiny_vllm(python: Path, logs: Path) -> tuple[Any, Callable[[], None]]:
    from shadowreplay.shadow.engine import EngineConfig, VllmServer
    from shadowreplay.shadow.tiny_model import MODEL_NAME, build_tiny_model

    model = build_tiny_model(python=python)
    # --enforce-eager: no torch.compile warm-up, so the server starts quickly on a busy machine.
    # A tool-call parser: requests with tool_choice "required"/named/auto are served (vLLM refuses
    # them without one); requests without tools are unaffected. Blocks of 32 tokens (the CPU
    # attention's smallest) let short shared prefixes be cached; the dev mode serves
    # /reset_prefix_cache, so a test that counts cache hits starts from an empty cache.
    cfg = EngineConfig(model=model, served_model_name=MODEL_NAME, port=free_port(), max_model_len=2048,
                       enable_prefix_caching=True, env={"VLLM_SERVER_DEV_MODE": "1"},
                       extra_args=["--enforce-eager", "--block-size", "32", "--enable-auto-tool-choice", "--tool-call-parser", "hermes"])
    srv = VllmServer(cfg, logs / "tiny-vllm.log", python=python).start()
    try:
        srv.wait_ready(timeout_s=READY_TIMEOUT_S)
    except BaseException:
        srv.stop()
        raise
    return (srv, model), srv.stop


def vllm_grpc_protos(python: Path, out: Path):
    """vllm_engine_pb2(_grpc), generated from the .proto files smg-grpc-proto ships in the vLLM venv."""
    r = subprocess.run(
        [str(python), "-c", "import os, smg_grpc_proto as m; print(os.path.join(os.path.dirname(m.__file__), 'proto'))"],
        capture_output=True, text=True,
    )  # fmt: skip
    if r.returncode != 0:
        raise RuntimeError(f"smg-grpc-servicer is not installed in {python}: pip install smg-grpc-servicer")
    proto_dir = Path(r.stdout.strip())
    from grpc_tools import protoc

    include = Path(protoc.__file__).parent / "_proto"
    args = ["protoc", f"-I{proto_dir}", f"-I{include}", f"--python_out={out}", f"--grpc_python_out={out}"]
    if protoc.main(args + [str(proto_dir / "common.proto"), str(proto_dir / "vllm_engine.proto")]) != 0:
        raise RuntimeError("protoc failed on vLLM's gRPC protos")
    sys.path.insert(0, str(out))
    import vllm_engine_pb2
    import vllm_engine_pb2_grpc

    return vllm_engine_pb2, vllm_engine_pb2_grpc


def _vllm_grpc(python: Path, logs: Path) -> tuple[Any, Callable[[], None]]:
    import grpc

    from shadowreplay.shadow.tiny_model import build_tiny_model

    model = build_tiny_model(python=python)
    pb2, pb2_grpc = vllm_grpc_protos(python, Path(tempfile.mkdtemp(prefix="vllm_pb2_")))
    port = free_port()
    log_path = logs / "vllm-grpc.log"
    env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1")
    env.pop("GRPC_ENABLE_FORK_SUPPORT", None)  # tests/conftest.py's setting is for the test process only
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [str(python), "-m", "vllm.entrypoints.grpc_server", "--model", str(model), "--host", "127.0.0.1",
             "--port", str(port), "--max-model-len", "2048", "--dtype", "bfloat16"],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    def stop() -> None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        except ProcessLookupError:
            pass

    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            stub = pb2_grpc.VllmEngineStub(ch)
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"vLLM gRPC server exited {proc.returncode}: {log_path.read_text()[-3000:]}")
                try:
                    if stub.HealthCheck(pb2.HealthCheckRequest(), timeout=2).healthy:
                        break
                except grpc.RpcError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"vLLM gRPC server did not become healthy in {READY_TIMEOUT_S:.0f} s")
                time.sleep(0.5)
    except BaseException:
        stop()
        raise
    return (port, proc.pid, pb2, pb2_grpc), stop


LAUNCHERS: dict[str, Callable[[Path, Path], tuple[Any, Callable[[], None]]]] = {"tiny_vllm": _tiny_vllm, "vllm_grpc": _vllm_grpc}


class Engines:
    """The session's background engines, by fixture name."""

    def __init__(self) -> None:
        self.started: dict[str, BackgroundEngine] = {}
        self.logs = Path(tempfile.mkdtemp(prefix="shadowreplay-test-engines-"))

    def start(self, name: str) -> None:
        python = vllm_python_path()
        if name in self.started or python is None or not python.exists():
            return  # the fixture reports a missing venv
        launch = LAUNCHERS[name]
        self.started[name] = BackgroundEngine(name, lambda: launch(python, self.logs))

    def get(self, name: str) -> Any:
        self.start(name)
        return self.started[name].get()

    def stop(self, name: str) -> None:
        eng = self.started.get(name)
        if eng is None:
            return
        try:
            eng.stop()
        except Exception as e:  # noqa: BLE001 - a failed stop must not hide the others
            print(f"stopping {eng.name}: {e}", file=sys.stderr)

    def stop_all(self) -> None:
        for name in list(self.started):
            self.stop(name)
