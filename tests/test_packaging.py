"""The wheel installs exactly one import package, `shadowreplay`, with every part and its SQL."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

PARTS = ("recorder", "anonymize", "replayer", "shadow", "analysis", "traces")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)],
                       capture_output=True, text=True, timeout=600)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    (whl,) = out.glob("shadowreplay-*.whl")
    return whl


def test_the_wheel_has_one_top_level_name(wheel):
    with zipfile.ZipFile(wheel) as z:
        record = next(n for n in z.namelist() if n.endswith(".dist-info/RECORD"))
        paths = [line.split(",")[0] for line in z.read(record).decode().splitlines() if line]
    tops = {p.split("/")[0] for p in paths if ".dist-info/" not in p}
    assert tops == {"shadowreplay"}
    for part in PARTS:
        assert f"shadowreplay/{part}/__init__.py" in paths
    shipped_sql = {p for p in paths if p.endswith(".sql")}
    repo_sql = {f"shadowreplay/{f.relative_to(REPO)}" for part in PARTS for f in (REPO / part).rglob("*.sql")}
    assert repo_sql and repo_sql <= shipped_sql
    # the logits processor vLLM's own Python imports from the shadow's PYTHONPATH
    assert "shadowreplay/shadow/vllm_plugins/shadowreplay_pin.py" in paths


def test_the_installed_wheel_imports_from_itself(wheel, tmp_path):
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); "
        "import shadowreplay.recorder, shadowreplay.replayer, shadowreplay.anonymize.scrubber, shadowreplay.analysis.cli; "
        "from shadowreplay.recorder.cli import addon_path; "
        "mods = [shadowreplay.recorder, shadowreplay.replayer, shadowreplay.anonymize.scrubber]; "
        "assert all(m.__file__.startswith(sys.argv[1]) for m in mods), [m.__file__ for m in mods]; "
        "assert str(addon_path()).startswith(sys.argv[1]); "
        # the analysis SQL is read from the install and parses with DuckDB
        "from shadowreplay import sqlfiles; "
        "assert 'percentile' in sqlfiles.load('shadowreplay.analysis', 'summary').lower(); "
        "assert sqlfiles.split(sqlfiles.load('shadowreplay.analysis', 'fold')); "
        # the Chinese name tagger's weights ship in the wheel
        "from shadowreplay.anonymize import names_zh_model; assert names_zh_model.model().table.any(); "
        # every module imports from the install alone (none uses an old top-level name)
        "import importlib, pkgutil, shadowreplay; "
        "[importlib.import_module(m.name) for m in pkgutil.walk_packages(shadowreplay.__path__, 'shadowreplay.') "
        "if not m.name.rsplit('.', 1)[1].startswith('_')]; print('ok')"
    )
    # -I: no current folder, no PYTHONPATH, so only the wheel's copy can be imported first
    r = subprocess.run([sys.executable, "-I", "-c", code, str(target)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
    for old in PARTS:  # the old top-level names are gone from the install
        assert not (target / old).exists()
