"""HMAC-SHA256 with the key schedule done once.

`hmac.digest(key, msg, "sha256")` looks the digest up and pads the key on every call; with
OpenSSL 3 that costs several times the hashing of a short value. RFC 2104 HMAC is
H((K ^ opad) || H((K ^ ipad) || msg)), so the two keyed SHA-256 states are computed once and
copied per message. Same digests as `hmac.digest` (a test checks)."""

from __future__ import annotations

import hashlib

_BLOCK = 64  # SHA-256 block size in bytes


class KeyedSHA256:
    __slots__ = ("_inner", "_outer")

    def __init__(self, key: bytes):
        if len(key) > _BLOCK:
            key = hashlib.sha256(key).digest()
        key = key.ljust(_BLOCK, b"\0")
        self._inner = hashlib.sha256(bytes(b ^ 0x36 for b in key))
        self._outer = hashlib.sha256(bytes(b ^ 0x5C for b in key))

    def digest(self, msg: bytes) -> bytes:
        inner = self._inner.copy()
        inner.update(msg)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.digest()
