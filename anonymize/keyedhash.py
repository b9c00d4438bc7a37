"""HMAC-SHA256 under one key, keyed once.

`hmac.digest(key, msg, "sha256")` looks the digest up and pads the key on every call; with
OpenSSL 3 that costs several times the hashing of a short value. An `hmac` object keyed once and
`.copy()`-ed per message skips that and gives the same digests (a test checks, and pins the
scrubber's keyed substitutes)."""

from __future__ import annotations

import hmac


class KeyedSHA256:
    __slots__ = ("_keyed",)

    def __init__(self, key: bytes):
        self._keyed = hmac.new(key, digestmod="sha256")

    def digest(self, msg: bytes) -> bytes:
        h = self._keyed.copy()
        h.update(msg)
        return h.digest()
