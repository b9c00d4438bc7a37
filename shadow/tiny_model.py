"""The tiny model: a random-weight LlamaForCausalLM (hidden 256, 4 layers, 8192 positions, bf16,
about 11 MB) with a byte-level BPE tokenizer trained locally on Faker text, so a shadow vLLM can
start with no download. Its output is gibberish; its serving cost is real.

Built once into a cache folder and reused; concurrent builders wait on a file lock.
"""

from __future__ import annotations

import fcntl
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from shadowreplay.errors import ShadowReplayError

from .venv import find_vllm_python

VERSION = "tiny-model-v1"
MODEL_NAME = "tiny-llama"  # the default served model name
MARKER = ".complete"
BUILDER = Path(__file__).with_name("_build_tiny_model.py")


def cache_root() -> Path:
    env = os.environ.get("SHADOWREPLAY_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "shadowreplay"


def default_model_dir() -> Path:
    return cache_root() / VERSION


def is_built(out_dir: str | os.PathLike) -> bool:
    return (Path(out_dir) / MARKER).exists()


def corpus_text(n_paragraphs: int = 3000, seed: int = 1234) -> str:
    """Training text for the tokenizer: Faker prose, names, addresses, emails, numbers, and a bit
    of chat-like and code-like text so prompts of the demo tokenize to realistic lengths."""
    from faker import Faker

    fake = Faker(["en_US", "de_DE", "fr_FR"])
    Faker.seed(seed)
    rnd = random.Random(seed)
    lines = []
    for _ in range(n_paragraphs):
        lines.append(fake.paragraph(nb_sentences=rnd.randint(3, 8)))
        lines.append(f"{fake.name()} <{fake.email()}> {fake.phone_number()} {fake.address()}".replace("\n", ", "))
        lines.append(f"User: {fake.sentence()} Assistant: {fake.sentence()}")
        lines.append(f'{{"id": {rnd.randint(0, 10**6)}, "city": "{fake.city()}", "date": "{fake.date()}"}}')
    return "\n".join(lines) + "\n"


def build_tiny_model(out_dir: str | os.PathLike | None = None, *, python: str | os.PathLike | None = None) -> Path:
    """Builds the tiny model into out_dir (default: the cache, ~/.cache/shadowreplay/tiny-model-v1
    or $SHADOWREPLAY_CACHE/tiny-model-v1) unless it is already there; returns the folder.

    Building needs torch and transformers, which live in the vLLM venv: the builder runs there
    (`python`, default: the vLLM python found by shadow.venv). Takes ~10-20 s once."""
    out = Path(out_dir) if out_dir is not None else default_model_dir()
    if is_built(out):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    lock_path = out.parent / f".{out.name}.lock"
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_built(out):  # another process built it while we waited
            return out
        py = find_vllm_python(python, modules=("torch", "transformers", "tokenizers"))
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        try:
            (staging / "corpus.txt").write_text(corpus_text())
            r = subprocess.run([str(py), str(BUILDER), str(staging)], capture_output=True, text=True)
            if r.returncode != 0:
                tail = "\n".join((r.stderr or r.stdout).strip().splitlines()[-15:])
                raise ShadowReplayError(f"building the tiny model with {py} failed:\n{tail}")
            (staging / MARKER).write_text(VERSION + "\n")
            if out.exists():
                shutil.rmtree(out)  # an incomplete earlier build (no marker)
            os.replace(staging, out)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    print(build_tiny_model(argv[0] if argv else None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
