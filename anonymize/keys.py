"""Loading the scrub key. There is never a built-in default key."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from shadowreplay.errors import ConfigError

ENV_VAR = "SHADOWREPLAY_SCRUB_KEY"


def _missing() -> ConfigError:
    return ConfigError(
        f"no scrub key: pass --key-file FILE or set {ENV_VAR} "
        "(there is no default key; make one with `head -c 32 /dev/urandom | base64 > scrub.key`)"
    )


def check_key(key_file: str | os.PathLike | None = None, *, environ: Mapping[str, str] = os.environ) -> None:
    """Raises load_key's ConfigError where a key is plainly missing, without reading the key:
    `key_file` is a readable, non-empty file, else $SHADOWREPLAY_SCRUB_KEY is set and not blank.
    For a process that hands the key's source on to the one that loads it."""
    if key_file is not None:
        path = Path(key_file)
        try:
            st = path.stat()
        except FileNotFoundError:
            raise ConfigError(f"scrub key file {path} does not exist") from None
        except OSError as e:
            raise ConfigError(f"cannot read scrub key file {path}: {e.strerror}") from None
        if path.is_dir():
            raise ConfigError(f"scrub key file {path} is a directory")
        if not os.access(path, os.R_OK):
            raise ConfigError(f"cannot read scrub key file {path}: Permission denied")
        if st.st_size == 0:
            raise ConfigError(f"scrub key file {path} is empty")
        return
    value = environ.get(ENV_VAR)
    if value is None:
        raise _missing()
    if not value.strip():
        raise ConfigError(f"{ENV_VAR} is set but empty")


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
        raise _missing()
    key = value.strip().encode("utf-8")
    if not key:
        raise ConfigError(f"{ENV_VAR} is set but empty")
    return key
