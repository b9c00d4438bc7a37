"""Loading the scrub key. There is never a built-in default key, and a weak one is refused.

A key needs at least MIN_KEY_BYTES bytes of material: a hex or base64 key counts its decoded
bytes (`head -c 32 /dev/urandom | base64` gives 32), any other text its bytes; whitespace around
it does not count, and a key of fewer than MIN_DISTINCT different bytes (`aaaa...`) is refused
however long it is."""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Mapping
from pathlib import Path

from shadowreplay.errors import ConfigError

ENV_VAR = "SHADOWREPLAY_SCRUB_KEY"
MIN_KEY_BYTES = 16
MIN_DISTINCT = 8
MAKE_ONE = "make one with `head -c 32 /dev/urandom | base64 > scrub.key`"
_HEX = re.compile(rb"^[0-9a-fA-F]+$")
_B64 = re.compile(rb"^[A-Za-z0-9+/]+={0,2}$")


def key_material(key: bytes) -> bytes:
    """The bytes a key's strength is judged by: a hex or base64 key decoded, else the key."""
    k = key.strip()
    if len(k) % 2 == 0 and _HEX.match(k):
        return bytes.fromhex(k.decode())
    if len(k) % 4 == 0 and _B64.match(k):
        try:
            return base64.b64decode(k, validate=True)
        except (binascii.Error, ValueError):
            pass
    return k


def check_strength(key: bytes, where: str) -> None:
    """ConfigError (one line naming `where`) for an empty, whitespace-only or weak key."""
    if not key.strip():
        raise ConfigError(f"{where} is empty or only whitespace ({MAKE_ONE})")
    material = key_material(key)
    if len(material) < MIN_KEY_BYTES:
        raise ConfigError(f"{where} holds {len(material)} bytes of key material; a scrub key needs at least "
                          f"{MIN_KEY_BYTES} ({MAKE_ONE})")
    if len(set(material)) < MIN_DISTINCT:
        raise ConfigError(f"{where} repeats {len(set(material))} different bytes; a scrub key must be random ({MAKE_ONE})")


def _missing() -> ConfigError:
    return ConfigError(
        f"no scrub key: pass --key-file FILE or set {ENV_VAR} "
        "(there is no default key; make one with `head -c 32 /dev/urandom | base64 > scrub.key`)"
    )


def check_key(key_file: str | os.PathLike | None = None, *, environ: Mapping[str, str] = os.environ) -> None:
    """Raises load_key's ConfigError where the key is missing or weak: for a process that hands
    the key's source (the path, or the inherited environment) on to the one that uses it."""
    load_key(key_file, environ=environ)


def load_key(key_file: str | os.PathLike | None = None, *, environ: Mapping[str, str] = os.environ) -> bytes:
    """The key from `key_file` (contents, whitespace-stripped), else from $SHADOWREPLAY_SCRUB_KEY.

    Raises ConfigError when neither gives a key, or the key is weak (check_strength)."""
    if key_file is not None:
        path = Path(key_file)
        try:
            key = path.read_bytes()
        except FileNotFoundError:
            raise ConfigError(f"scrub key file {path} does not exist") from None
        except IsADirectoryError:
            raise ConfigError(f"scrub key file {path} is a directory") from None
        except OSError as e:
            raise ConfigError(f"cannot read scrub key file {path}: {e.strerror}") from None
        if not key:
            raise ConfigError(f"scrub key file {path} is empty ({MAKE_ONE})")
        check_strength(key, f"scrub key file {path}")
        return key.strip()
    value = environ.get(ENV_VAR)
    if value is None:
        raise _missing()
    key = value.encode("utf-8")
    if not key.strip():
        raise ConfigError(f"{ENV_VAR} is set but empty or only whitespace ({MAKE_ONE})")
    check_strength(key, ENV_VAR)
    return key.strip()
