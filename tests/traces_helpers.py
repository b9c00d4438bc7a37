"""Helpers for the traces tests: a small byte-level BPE tokenizer trained on Faker text, an
independent reader of the source traces, and a CLI runner."""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def train_tokenizer(folder: Path, vocab: int = 4096) -> Path:
    """Byte-level BPE like the tiny model's (vocab 4096), trained on Faker paragraphs (~1 s)."""
    from faker import Faker
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    f = Faker()
    f.seed_instance(7)
    texts = [f.paragraph(nb_sentences=8) for _ in range(3000)]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=vocab, show_progress=False,
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    folder.mkdir(parents=True, exist_ok=True)
    tok.save(str(folder / "tokenizer.json"))
    return folder


def cli(*args: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    e = dict(os.environ, **(env or {}))
    p = subprocess.run([sys.executable, "-m", "shadowreplay.cli", *args], capture_output=True, text=True, env=e, cwd=REPO)
    if check and p.returncode != 0:
        raise AssertionError(f"shadowreplay {' '.join(args)} exited {p.returncode}: {p.stderr[-2000:]}")
    return p


def read_azure(path: Path) -> list[tuple[int, int, int]]:
    """(epoch microseconds, context, generated) with the csv module and datetime, no DuckDB."""
    out = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            ts = row["TIMESTAMP"]
            head, _, frac = ts.partition(".")
            t = dt.datetime.strptime(head, "%Y-%m-%d %H:%M:%S").replace(tzinfo=dt.timezone.utc)
            us = int(t.timestamp()) * 1_000_000 + int((frac + "000000")[:6])
            out.append((us, int(row["ContextTokens"]), int(row["GeneratedTokens"])))
    return out


def read_mooncake(path: Path) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def quantiles(values, qs=(0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0)) -> list[float]:
    """Nearest-rank quantiles (lower), the same definition as DuckDB's quantile_disc."""
    v = sorted(values)
    import math

    return [v[max(0, min(len(v) - 1, math.ceil(q * len(v)) - 1))] if q > 0 else v[0] for q in qs]


def quantile_cont(values, q: float) -> float:
    """Linear interpolation between closest ranks (DuckDB's quantile_cont, numpy's default)."""
    v = sorted(values)
    pos = (len(v) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)
