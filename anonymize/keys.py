"""Loading the scrub key. There is never a built-in default key."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from shadowreplay.errors import ConfigError

ENV_VAR = "SHADOWREPLAY_SCRUB_KEY"


def load_key(key_file: str | os.PathLike | None = None, *, environ: Mapping[str, str] = os.environ) -> bytes:
    """The key from `key_file` (contents, whitespace-stripped), else from $SHADOWREPLAY_SCRUB_KEY.

    Raises ConfigError when neither gives a non-empty key."""
    if key_file is not None:
        path = Path(key_file)
        try:
            key = path.read_bytes().strip()
        except FileNotFoundError:
            raise ConfigError(f"scrub key file {path} does not exist") from None
        except IsADirectoryError:
            raise ConfigError(f"scrub key file {path} is a directory") from None
        except OSError as e:
            raise ConfigError(f"cannot read scrub key file {path}: {e.strerror}") from None
        if not key:
            raise ConfigError(f"scrub key file {path} is empty")
        return key
    value = environ.get(ENV_VAR)
    if value is None:
        raise ConfigError(
            f"no scrub key: pass --key-file FILE or set {ENV_VAR} "
            "(there is no default key; make one with `head -c 32 /dev/urandom | base64 > scrub.key`)"
        )
    key = value.strip().encode("utf-8")
    if not key:
        raise ConfigError(f"{ENV_VAR} is set but empty")
    return key
