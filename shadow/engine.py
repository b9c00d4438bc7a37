"""Starting, waiting for and stopping a real vLLM OpenAI-compatible server (the shadow).

The server runs in its own process group (vLLM forks an engine-core process), so stopping it
signals the whole group: SIGINT, then SIGTERM, then SIGKILL, each after a grace period.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from shadowreplay.errors import ConfigError, TargetError

from .venv import find_vllm_python

SCHEDULING_POLICIES = ("fcfs", "priority")
DEFAULT_KV_CACHE_GIB = 2  # VLLM_CPU_KVCACHE_SPACE on CPU hosts
DEFAULT_READY_TIMEOUT_S = 900.0  # startup is 1-2 min alone, compiling can take 5+ on a busy 2-core machine
# the logits processor that pins a Messages request's length (vllm_xargs.min_tokens), imported by
# vLLM's Python from this folder
PLUGIN_DIR = Path(__file__).resolve().parent / "vllm_plugins"
PIN_PROCESSOR = "shadowreplay_pin:PinnedLength"


@dataclass
class EngineConfig:
    model: Path
    served_model_name: str
    port: int
    host: str = "127.0.0.1"
    max_model_len: int = 8192
    dtype: str = "bfloat16"
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    enable_chunked_prefill: bool | None = None  # None: vLLM's default
    enable_prefix_caching: bool | None = None
    scheduling_policy: str | None = None
    long_prefill_token_threshold: int | None = None
    gpu_memory_utilization: float | None = None
    kv_cache_space_gib: float | None = DEFAULT_KV_CACHE_GIB
    extra_args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # extra environment, e.g. VLLM_CPU_OMP_THREADS_BIND
    nice: int = 0  # run the engine at this lower CPU priority (the replayer beside it keeps its timing)
    pin_length: bool = True  # load PIN_PROCESSOR (not into a pooling model, which takes none)

    def __post_init__(self) -> None:
        if self.scheduling_policy is not None and self.scheduling_policy not in SCHEDULING_POLICIES:
            raise ConfigError(f"--scheduling-policy must be one of {', '.join(SCHEDULING_POLICIES)}")
        for name in ("max_num_batched_tokens", "max_num_seqs", "max_model_len"):
            v = getattr(self, name)
            if v is not None and v <= 0:
                raise ConfigError(f"--{name.replace('_', '-')} must be positive")
        if self.gpu_memory_utilization is not None and not 0 < self.gpu_memory_utilization <= 1:
            raise ConfigError("--gpu-memory-utilization must be in (0, 1]")

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host
        return f"http://{host}:{self.port}"

    def replace(self, **kw) -> "EngineConfig":
        return dataclasses.replace(self, **kw)


def parse_engine_args(text: str | None) -> list[str]:
    """`--engine-args '...'`: extra vLLM flags passed through as they are."""
    if not text:
        return []
    try:
        return shlex.split(text)
    except ValueError as e:
        raise ConfigError(f"--engine-args: {e}") from None


def _bool_flag(name: str, value: bool | None) -> list[str]:
    if value is None:
        return []
    return [f"--{name}" if value else f"--no-{name}"]


def server_command(python: str | os.PathLike, cfg: EngineConfig) -> list[str]:
    """The command line that starts vLLM's OpenAI-compatible API server for `cfg`."""
    cmd = [
        str(python), "-m", "vllm.entrypoints.openai.api_server",
        "--model", str(cfg.model),
        "--served-model-name", cfg.served_model_name,
        "--host", cfg.host,
        "--port", str(cfg.port),
        "--max-model-len", str(cfg.max_model_len),
        "--dtype", cfg.dtype,
        "--disable-uvicorn-access-log",
    ]  # fmt: skip
    if cfg.max_num_batched_tokens is not None:
        cmd += ["--max-num-batched-tokens", str(cfg.max_num_batched_tokens)]
    if cfg.max_num_seqs is not None:
        cmd += ["--max-num-seqs", str(cfg.max_num_seqs)]
    cmd += _bool_flag("enable-chunked-prefill", cfg.enable_chunked_prefill)
    cmd += _bool_flag("enable-prefix-caching", cfg.enable_prefix_caching)
    if cfg.scheduling_policy is not None:
        cmd += ["--scheduling-policy", cfg.scheduling_policy]
    if cfg.long_prefill_token_threshold is not None:
        cmd += ["--long-prefill-token-threshold", str(cfg.long_prefill_token_threshold)]
    if cfg.gpu_memory_utilization is not None:
        cmd += ["--gpu-memory-utilization", str(cfg.gpu_memory_utilization)]
    if _loads_pin(cfg):
        cmd += ["--logits-processors", PIN_PROCESSOR]
    return cmd + list(cfg.extra_args)


def _loads_pin(cfg: EngineConfig) -> bool:
    # vLLM refuses custom logits processors for a pooling (embedding) model, and a user's own
    # --logits-processors in --engine-args is theirs
    args = " ".join(cfg.extra_args)
    return cfg.pin_length and "--logits-processors" not in args and not any(w in args for w in ("pooling", "embed"))


def server_env(cfg: EngineConfig, base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env.update(cfg.env)
    if cfg.kv_cache_space_gib is not None:
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", f"{cfg.kv_cache_space_gib:g}")
    env.setdefault("VLLM_NO_USAGE_STATS", "1")
    env.setdefault("DO_NOT_TRACK", "1")
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("TRANSFORMERS_OFFLINE", "1")
    env["PYTHONUNBUFFERED"] = "1"
    if _loads_pin(cfg):
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PLUGIN_DIR), env.get("PYTHONPATH", "")) if p)
    return env


def log_tail(path: str | os.PathLike, lines: int = 20) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 16384))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def http_ok(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return 200 <= r.status < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def set_session_nice(pid: int, nice: int) -> bool:
    """Gives the session led by `pid` the CPU priority `nice` against other sessions. With the
    kernel's autogroups on (most desktop and many server kernels), CPU time is shared between
    sessions first and a process's own nice only counts within its session, so an engine started
    in a session of its own at nice 10 still competes with the replayer as an equal. Returns
    False where there are no autogroups (the process nice is then all there is)."""
    try:
        with open(f"/proc/{pid}/autogroup", "w") as f:
            f.write(str(nice))
        return True
    except OSError:
        return False


STOP_GRACE_S = (20.0, 10.0)  # a process group's time to exit after SIGINT, then after SIGTERM


def stop_group(pgid: int, proc: subprocess.Popen | None = None, grace_s: tuple[float, float] = STOP_GRACE_S) -> None:
    """Stops every process of a process group: SIGINT, then SIGTERM, then SIGKILL."""

    def gone(deadline: float) -> bool:
        while time.monotonic() < deadline:
            if proc is not None:
                proc.poll()  # reap our child so it does not linger as a zombie
            if not group_alive(pgid) or not _group_has_live(pgid):
                return True
            time.sleep(0.1)
        return False

    for sig, wait in ((signal.SIGINT, grace_s[0]), (signal.SIGTERM, grace_s[1]), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        if gone(time.monotonic() + wait):
            break
    if proc is not None:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


def _group_has_live(pgid: int) -> bool:
    """True if a non-zombie process of the group exists (for groups whose leader is not our child)."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


class VllmServer:
    """One vLLM server process (group). Use as a context manager, or start()/stop()."""

    def __init__(self, cfg: EngineConfig, log_path: str | os.PathLike, python: str | os.PathLike | None = None):
        self.cfg = cfg
        self.log_path = Path(log_path)
        self.python = find_vllm_python(python)
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return self.cfg.url

    @property
    def metrics_url(self) -> str:
        return self.cfg.url + "/metrics"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def command(self) -> list[str]:
        cmd = server_command(self.python, self.cfg)
        return ["nice", "-n", str(self.cfg.nice), *cmd] if self.cfg.nice else cmd

    def reset_prefix_cache(self, timeout_s: float = 30.0) -> None:
        """Empties the engine's prefix cache (vLLM's dev endpoint: the engine must run with
        VLLM_SERVER_DEV_MODE=1), so a second replay into it starts as cold as the first; retries
        while requests still hold blocks."""
        import httpx

        deadline = time.monotonic() + timeout_s
        while True:
            try:
                r = httpx.post(self.url + "/reset_prefix_cache", timeout=10, trust_env=False)
                if r.status_code == 404:
                    raise TargetError(f"{self.url} has no /reset_prefix_cache (start it with VLLM_SERVER_DEV_MODE=1)")
                if r.is_success and r.json().get("success"):
                    return
            except (httpx.HTTPError, ValueError) as e:
                if time.monotonic() > deadline:
                    raise TargetError(f"resetting the prefix cache of {self.url} failed: {e}") from None
            if time.monotonic() > deadline:
                raise TargetError(f"{self.url} did not reset its prefix cache within {timeout_s:.0f} s")
            time.sleep(0.5)

    def start(self) -> "VllmServer":
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        if http_ok(self.url + "/health", timeout=1.0):
            raise TargetError(f"something already answers at {self.url}; pick another --port")
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=server_env(self.cfg),
                start_new_session=True,  # own process group: stop() reaches the engine core too
            )
        if self.cfg.nice:
            set_session_nice(self.proc.pid, self.cfg.nice)
        return self

    def wait_ready(self, timeout_s: float = DEFAULT_READY_TIMEOUT_S) -> None:
        """Waits until /v1/models answers; raises TargetError with the log tail when the server
        exits or does not answer in time."""
        assert self.proc is not None, "start() first"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            rc = self.proc.poll()
            if rc is not None:
                raise TargetError(
                    f"vLLM exited with code {rc} before it was ready (log: {self.log_path}):\n{log_tail(self.log_path)}"
                )
            if http_ok(self.url + "/v1/models", timeout=2.0):
                return
            time.sleep(0.5)
        raise TargetError(
            f"vLLM did not answer at {self.url}/v1/models within {timeout_s:.0f} s (log: {self.log_path}):\n"
            f"{log_tail(self.log_path)}"
        )

    def stop(self, grace_s: tuple[float, float] = STOP_GRACE_S) -> None:
        if self.proc is None:
            return
        stop_group(self.proc.pid, self.proc, grace_s)

    def __enter__(self) -> "VllmServer":
        self.start()
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
