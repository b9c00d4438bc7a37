"""Helpers for the analysis tests (synthetic recordings with planted periodic anomalies: the
generator is tests/analysis_synth.py, which the analysis benchmark uses too)."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tests.analysis_synth import (  # noqa: F401  (re-exported)
    PlantedAnomaly,
    SynthSpec,
    make_engine_metrics,
    make_replay,
    make_requests,
    write_recording,
    write_replay,
    write_sorted,
)
from shadowreplay.cli import main as cli_main

__all__ = [
    "PlantedAnomaly", "SynthSpec", "make_engine_metrics", "make_replay", "make_requests", "write_recording", "write_replay",
    "write_sorted", "weekly_recording", "run_cli", "run_json", "read_table", "fold_cells_numpy", "png_is_blank",
]
from shadowreplay.dataset import parquet_files


_CACHE: dict[str, Path] = {}


def weekly_recording(tmp_path_factory) -> Path:
    """3 weeks (written once per test session); a batch client sends ~4x prompts every Wednesday
    14:00-15:00 UTC and everyone's latency triples in that hour."""
    if "weekly" not in _CACHE:
        root = tmp_path_factory.mktemp("weekly")
        write_recording(root, SynthSpec(periods=3, rate_per_s=0.02, seed=11))
        _CACHE["weekly"] = root
    return _CACHE["weekly"]


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """Runs `shadowreplay ARGV` in-process; returns (exit code, stdout, stderr)."""
    rc = cli_main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def run_json(capsys, *argv: str) -> dict:
    rc, out, err = run_cli(capsys, *argv, "--json")
    assert rc == 0, err
    return json.loads(out)


def read_table(root: Path, table: str, columns: list[str] | None = None) -> pa.Table:
    return pq.ParquetDataset([str(p) for p in parquet_files(root, table)]).read(columns=columns)


def fold_cells_numpy(t_s: np.ndarray, lat: np.ndarray, prompt: np.ndarray, period_s: float, bucket_s: float, origin_s: float):
    """Independent re-computation of the fold: {(period_no, slot): (n, tp99, mean_prompt)}."""
    s = t_s - origin_s
    per = np.floor(s / period_s).astype(np.int64)
    slot = np.floor((s - per * period_s) / bucket_s).astype(np.int64)
    cells = {}
    keys = per * 100000 + slot
    for k in np.unique(keys):
        m = keys == k
        cells[(int(k // 100000), int(k % 100000))] = (int(m.sum()), float(np.percentile(lat[m], 99)), float(prompt[m].mean()))
    return cells


def png_is_blank(path: Path) -> bool:
    """True when a PNG screenshot has (almost) a single colour. Decodes the IDAT stream with zlib;
    the unfiltered byte histogram of a blank page has a handful of values."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        ctype = data[pos + 4 : pos + 8]
        if ctype == b"IDAT":
            idat += data[pos + 8 : pos + 8 + length]
        pos += 12 + length
    raw = zlib.decompress(idat)
    return len(set(raw[::7])) < 16
