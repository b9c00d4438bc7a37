"""Shared fixtures. Area-specific helpers live in tests/<area>_helpers.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shadowreplay.ports import free_port as _free_port

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
TRACES = SHARED / "data" / "traces"


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
def tiny_vllm(vllm_python, tmp_path_factory):
    """One real vLLM (CPU) serving the tiny model, shared by the tests that only send it requests
    (a start costs one to five minutes here). Yields (server, model_dir)."""
    from shadowreplay.shadow.engine import EngineConfig, VllmServer
    from shadowreplay.shadow.tiny_model import MODEL_NAME, build_tiny_model

    model = build_tiny_model(python=vllm_python)
    # --enforce-eager: no torch.compile warm-up, so the server starts quickly on a busy machine.
    # A tool-call parser: requests with tool_choice "required"/named/auto are served (vLLM refuses
    # them without one); requests without tools are unaffected.
    cfg = EngineConfig(model=model, served_model_name=MODEL_NAME, port=free_port(), max_model_len=2048,
                       extra_args=["--enforce-eager", "--enable-auto-tool-choice", "--tool-call-parser", "hermes"])
    with VllmServer(cfg, tmp_path_factory.mktemp("vllm") / "vllm.log", python=vllm_python) as srv:
        yield srv, model


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
