"""Token counting for prompt synthesis: a local Hugging Face tokenizer directory (tokenizer.json,
via the `tokenizers` library) or a running vLLM server's /tokenize endpoint.

Counts include the special tokens the tokenizer adds itself (BOS for Llama-style tokenizers), as
the server does when it reports prompt_tokens. `n_special` is that constant overhead."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from shadowreplay.errors import ConfigError, TargetError


class Tokenizer(Protocol):
    name: str
    n_special: int  # tokens added to every text (BOS/EOS post-processing)

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids of each text, special tokens excluded."""
        ...

    def count(self, texts: Sequence[str]) -> list[int]:
        """Token count of each text as the server would report it (special tokens included)."""
        ...


class LocalTokenizer:
    """A tokenizer.json (or a folder holding one), run in-process by the `tokenizers` library."""

    def __init__(self, path: str | Path):
        try:
            from tokenizers import Tokenizer as HFTokenizer
        except ImportError:  # pragma: no cover - it is a dependency
            raise ConfigError("the `tokenizers` package is needed for --tokenizer DIR (pip install tokenizers)") from None
        p = Path(path)
        f = p / "tokenizer.json" if p.is_dir() else p
        if not f.is_file():
            raise ConfigError(f"--tokenizer {path}: no tokenizer.json there")
        try:
            self._tok = HFTokenizer.from_file(str(f))
        except Exception as e:
            raise ConfigError(f"--tokenizer {path}: cannot load {f.name} ({e})") from None
        self._tok.no_truncation()
        self._tok.no_padding()
        self.name = str(p)
        self.n_special = len(self._tok.encode("", add_special_tokens=True).ids)

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        return [e.ids for e in self._tok.encode_batch(list(texts), add_special_tokens=False)]

    def count(self, texts: Sequence[str]) -> list[int]:
        return [len(e.ids) + self.n_special for e in self._tok.encode_batch(list(texts), add_special_tokens=False)]


class HttpTokenizer:
    """A vLLM server's POST /tokenize ({"model", "prompt"} -> {"count", "tokens"})."""

    def __init__(self, url: str, model: str | None = None, timeout: float = 60.0):
        import httpx

        self._base = url.rstrip("/")
        if self._base.endswith("/tokenize"):
            self._base = self._base[: -len("/tokenize")]
        self._client = httpx.Client(timeout=timeout)
        self.name = self._base
        self.model = model or self._served_model()
        self.n_special = self._post("", special=True)["count"]

    def _served_model(self) -> str:
        try:
            r = self._client.get(self._base + "/v1/models")
            r.raise_for_status()
            return r.json()["data"][0]["id"]
        except Exception as e:
            raise TargetError(f"--tokenizer {self._base}: cannot list models ({e})") from None

    def _post(self, text: str, *, special: bool) -> dict:
        body = {"model": self.model, "prompt": text, "add_special_tokens": special}
        try:
            r = self._client.post(self._base + "/tokenize", content=json.dumps(body),
                                  headers={"content-type": "application/json"})
        except Exception as e:
            raise TargetError(f"--tokenizer {self._base}: /tokenize unreachable ({e})") from None
        if r.status_code != 200:
            raise TargetError(f"--tokenizer {self._base}: /tokenize answered {r.status_code}: {r.text[:200]}")
        return r.json()

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        return [self._post(t, special=False)["tokens"] for t in texts]

    def count(self, texts: Sequence[str]) -> list[int]:
        return [self._post(t, special=False)["count"] + self.n_special for t in texts]

    def chat_overhead(self) -> int:
        """Tokens the server's chat template adds around one user message (its count for a
        message with empty content, special tokens included)."""
        body = {"model": self.model, "messages": [{"role": "user", "content": ""}], "add_generation_prompt": True}
        try:
            r = self._client.post(self._base + "/tokenize", content=json.dumps(body), headers={"content-type": "application/json"})
        except Exception as e:
            raise TargetError(f"--tokenizer {self._base}: /tokenize unreachable ({e})") from None
        if r.status_code != 200:
            raise TargetError(f"--tokenizer {self._base}: /tokenize of a chat answered {r.status_code}: {r.text[:200]}")
        return int(r.json()["count"])

    def close(self) -> None:
        self._client.close()


def open_tokenizer(spec: str, model: str | None = None) -> Tokenizer:
    """DIR_OR_URL: http(s)://... is a vLLM server, anything else a local tokenizer folder/file."""
    if spec.startswith(("http://", "https://")):
        return HttpTokenizer(spec, model)
    return LocalTokenizer(spec)
