"""Shared fixtures. Area-specific helpers live in tests/<area>_helpers.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# gRPC's fork handlers (on by default in grpcio's core) run on every fork() of this process, and
# the vllm_grpc engine is polled over gRPC in a background thread while the first tests run: a
# fork with a preexec_fn (pyspark's JVM launch) then now and then died before its exec
# ("Java gateway process exited", seen in `make test-all`; 1 fork in 200 beside a polling thread
# here). No test forks a process that goes on using gRPC, so the handlers are switched off.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

from shadowreplay.ports import free_port as _free_port  # noqa: E402
from tests.engines import LAUNCHERS, Engines, EngineUnavailable  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
TRACES = SHARED / "data" / "traces"
ENGINES = Engines()

# The tiers (docs/CONTRIBUTING.md): `make test` runs everything but `nightly`; `make test-all` runs all.


def pytest_collection_modifyitems(session, config, items):
    """Tests that need no engine run first, while the shared engines start; then the modules that
    use a shared engine; last those that start engines of their own (the shared ones are stopped
    by then). Within each group the collected order is kept, so module fixtures stay contiguous."""
    def rank(item) -> int:
        if set(getattr(item, "fixturenames", ())) & set(LAUNCHERS):
            return 1
        return 2 if item.get_closest_marker("vllm") else 0

    by_module: dict[str, int] = {}
    for it in items:
        key = it.nodeid.split("::")[0]
        by_module[key] = max(by_module.get(key, 0), rank(it))
    items.sort(key=lambda it: by_module[it.nodeid.split("::")[0]])


def pytest_collection_finish(session):
    """Starts each shared engine a selected test needs, in the background."""
    if session.config.option.collectonly:
        return
    for it in session.items:
        for name in set(getattr(it, "fixturenames", ())) & set(LAUNCHERS):
            _LAST_USER[name] = it.nodeid
    for name in sorted(_LAST_USER):
        ENGINES.start(name)


_LAST_USER: dict[str, str] = {}  # engine -> the last selected test that uses it


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """Stops a shared engine once the last test that needs it is done."""
    yield
    for name, nodeid in _LAST_USER.items():
        if nodeid == item.nodeid:
            ENGINES.stop(name)


def pytest_sessionfinish(session, exitstatus):
    ENGINES.stop_all()
    for name, eng in ENGINES.started.items():
        if eng.ready_after_s is not None:
            session.config.get_terminal_writer().line(f"shared engine {name}: ready {eng.ready_after_s:.0f} s after collection")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def traces_dir() -> Path:
    """../shared/data/traces (real public traces). Missing on a checkout without shared/: skip."""
    if not TRACES.is_dir():
        pytest.skip(f"{TRACES} not present")
    return TRACES


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    """The Python of the vLLM venv (.venv-vllm, made by `make setup`).

    A missing venv is a failure, not a skip, so CI cannot silently skip the real-engine tests;
    set SHADOWREPLAY_SKIP_VLLM=1 to skip them deliberately on a machine without it."""
    if os.environ.get("SHADOWREPLAY_SKIP_VLLM") == "1":
        pytest.skip("SHADOWREPLAY_SKIP_VLLM=1")
    py = Path(os.environ.get("SHADOWREPLAY_VLLM_PYTHON", REPO / ".venv-vllm" / "bin" / "python"))
    if not py.exists():
        pytest.fail(f"vLLM venv not found at {py}: run `make setup` (or set SHADOWREPLAY_SKIP_VLLM=1)")
    return py


@pytest.fixture(scope="session")
def tiny_vllm(vllm_python):
    """One real vLLM (CPU) serving the tiny model, shared by the tests that only send it requests
    (tests/engines.py: started in the background when collection ends). Yields (server, model_dir).
    A test that counts prefix-cache hits calls `server.reset_prefix_cache()` first."""
    return _engine("tiny_vllm")


@pytest.fixture(scope="session")
def vllm_grpc(vllm_python):
    """vLLM's own gRPC server with the tiny model (tests/engines.py). Yields (port, pid, pb2, pb2_grpc)."""
    return _engine("vllm_grpc")


def _engine(name: str):
    try:
        return ENGINES.get(name)
    except EngineUnavailable as e:
        pytest.fail(str(e), pytrace=False)


@pytest.fixture
def scrub_key() -> bytes:
    return b"test-key-0123456789abcdef-not-a-secret"


@pytest.fixture
def key_file(tmp_path_factory, scrub_key) -> Path:
    """A key file kept away from any output folder."""
    d = tmp_path_factory.mktemp("keys")
    p = d / "scrub.key"
    p.write_bytes(scrub_key)
    p.chmod(0o600)
    return p


def free_port() -> int:
    """A free port outside the kernel's ephemeral range (see shadowreplay/ports.py)."""
    return _free_port()


@pytest.fixture
def port() -> int:
    return free_port()
