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


class KeyedIds:
    """The keyed ids a recording carries (`prefix_hash`, `client_id`), defined once: the Scrubber
    uses them for rows, the recorder's proxy side for sampling and client filters (without the
    scrubber's imports)."""

    __slots__ = ("_hmac",)

    def __init__(self, key: bytes):
        self._hmac = KeyedSHA256(key)

    def keyed_hash(self, text: str) -> str:
        return self._hmac.digest(b"hash\0" + text.encode("utf-8", "surrogatepass")).hex()[:16]

    def client_id(self, credential: str) -> str:
        cred = credential.strip()
        if cred[:7].lower() == "bearer ":
            cred = cred[7:].strip()
        return "c_" + self.keyed_hash("client\0" + cred)

    def fraction(self, domain: bytes, value: bytes) -> float:
        """A keyed, uniform number in [0, 1) for `value`: the same under the same key, unguessable
        without it (the recorder's sampling decision)."""
        return int.from_bytes(self._hmac.digest(domain + b"\0" + value)[:8], "big") / 2.0**64
