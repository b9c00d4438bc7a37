"""A small deterministic generator fed by SHAKE-256 of an HMAC digest.

Cheaper to create than random.Random (no Mersenne-Twister seeding per value), and its output
depends only on the digest: the same key and value give the same substitute in every process."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


class KeyedRandom:
    __slots__ = ("_seed", "_buf", "_i")

    def __init__(self, digest: bytes):
        self._seed = digest
        self._buf = hashlib.shake_256(digest).digest(64)
        self._i = 0

    def _byte(self) -> int:
        if self._i >= len(self._buf):
            # SHAKE output is prefix-consistent: a longer digest continues the same stream
            self._buf = hashlib.shake_256(self._seed).digest(len(self._buf) * 4)
        b = self._buf[self._i]
        self._i += 1
        return b

    def bytes(self, n: int) -> bytes:
        end = self._i + n
        if end > len(self._buf):
            self._buf = hashlib.shake_256(self._seed).digest(max(end, len(self._buf) * 4))
        out = self._buf[self._i : end]
        self._i = end
        return out

    def randrange(self, a: int, b: int | None = None) -> int:
        if b is None:
            a, b = 0, a
        n = b - a
        if n <= 0:
            raise ValueError("empty range")
        i = self._i
        if n <= 64:
            if i >= len(self._buf):
                return a + self._byte() % n
            self._i = i + 1
            return a + self._buf[i] % n
        return a + ((self._byte() << 16) | (self._byte() << 8) | self._byte()) % n

    def choice(self, seq: Sequence[T]) -> T:
        return seq[self.randrange(len(seq))]

    def digits(self, n: int) -> str:
        """n random decimal digits: the same as n times str(randrange(10))."""
        return self.bytes(n).translate(_MOD10).decode("ascii")


_MOD10 = bytes(48 + i % 10 for i in range(256))
