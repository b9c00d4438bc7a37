"""Durations and time points: the one parser behind every time flag and option.

A duration carries its unit in the value: `500ms`, `30s`, `5m`, `1.5h`, `1d`, `1w` (also `us`,
`min`). `0` needs no unit. A flag that took a bare number before units existed still reads one
in its old unit, and says once on stderr how to write it now.

A time point (`--start`, `--end`) is an ISO-8601 time (UTC when it names no zone) or an offset
from the data's first request: a duration, optionally with a leading `+`.

Errors are ConfigError with one line naming the flag; `duration_arg` and `time_point_arg` turn
them into argparse errors (usage line, one `error:` line, exit status 2).
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass

from .errors import ConfigError

UNITS: dict[str, float] = {
    "us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0,
}  # fmt: skip
EXAMPLES = "500ms, 30s, 5m, 1h, 1d, 1w"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)\s*$")

_noted: set[str] = set()


def deprecation_note(message: str) -> None:
    """One line on stderr, once per message and process."""
    if message not in _noted:
        _noted.add(message)
        print(f"shadowreplay: deprecated: {message}", file=sys.stderr, flush=True)


def _label(flag: str | None, text: object) -> str:
    return f"{flag} {text!r}" if flag else repr(text)


def parse_duration(
    text: str | float, *, flag: str | None = None, bare: str | None = None, zero: bool = False,
    maximum: float | None = None, quiet: bool = False,
) -> float:
    """`text` in seconds.

    bare: the unit a number without one is read in (a flag's meaning from before units); None
        refuses such a number, except 0. With `flag`, a bare number prints a deprecation note.
    zero: whether 0 is allowed (it never needs a unit). Negative durations are never allowed.
    maximum: the largest value allowed, in seconds.
    quiet: no deprecation note for a bare number (the caller gives its own).
    """
    raw = str(text)
    m = _DURATION.match(raw.lower())
    if not m:
        if raw.strip().startswith("-"):
            raise ConfigError(f"{_label(flag, raw)}: a duration cannot be negative")
        raise ConfigError(f"{_label(flag, raw)} is not a duration (examples: {EXAMPLES})")
    number, unit = float(m.group(1)), m.group(2)
    if not unit:
        if number == 0:
            unit = "s"
        elif bare is None:
            raise ConfigError(f"{_label(flag, raw)}: give a unit, e.g. {m.group(1)}s or {m.group(1)}ms")
        else:
            unit = bare
            if flag and not quiet:
                deprecation_note(f"{flag} {raw.strip()}: a number without a unit; write {flag} {m.group(1)}{bare}")
    if unit not in UNITS:
        raise ConfigError(f"{_label(flag, raw)}: unknown unit {unit!r} (one of {', '.join(UNITS)})")
    seconds = number * UNITS[unit]
    if seconds == 0 and not zero:
        raise ConfigError(f"{_label(flag, raw)}: must be greater than 0")
    if maximum is not None and seconds > maximum:
        raise ConfigError(f"{_label(flag, raw)}: at most {format_duration(maximum)}")
    return seconds


def format_duration(seconds: float) -> str:
    """Shortest readable form: 604800 -> '1w', 3600 -> '1h', 10 -> '10s', 0.5 -> '500ms'."""
    for unit in ("w", "d", "h", "m", "s"):
        size = UNITS[unit]
        if seconds >= size and abs(seconds / size - round(seconds / size)) < 1e-9:
            return f"{round(seconds / size)}{unit}"
    if seconds >= 1:
        return f"{seconds:g}s"
    return f"{seconds * 1000:g}ms"


@dataclass(frozen=True)
class TimePoint:
    """An absolute time, or an offset from the data's first request."""

    absolute: dt.datetime | None = None
    offset_s: float | None = None
    text: str = ""  # as the user wrote it (manifests keep it)

    def __str__(self) -> str:
        return self.text

    def at(self, first: dt.datetime) -> dt.datetime:
        if self.absolute is not None:
            return self.absolute
        return first + dt.timedelta(seconds=self.offset_s or 0.0)


def parse_time_point(text: str, *, flag: str | None = None, bare: str | None = "s") -> TimePoint:
    """An ISO-8601 time (UTC when it names no zone), or an offset: `90s`, `+5m`, `1500ms`.
    A bare number is an offset in `bare` (seconds: the meaning from before units)."""
    v = str(text).strip()
    offset = v[1:] if v.startswith("+") else v
    if _DURATION.match(offset.lower()):
        return TimePoint(offset_s=parse_duration(offset, flag=flag, bare=bare, zero=True), text=v)
    try:
        t = dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"{_label(flag, text)} is not a time: give an ISO time (2026-11-29T10:00:00Z) "
            f"or an offset from the first request (90s, 5m, 1h)"
        ) from None
    return TimePoint(absolute=t if t.tzinfo else t.replace(tzinfo=dt.timezone.utc), text=v)


def time_point(value: str | TimePoint, *, flag: str | None = None) -> TimePoint:
    """`value` as a TimePoint (parsed when it is text)."""
    return value if isinstance(value, TimePoint) else parse_time_point(value, flag=flag)


def parse_time(value: str | TimePoint, first: dt.datetime, *, flag: str | None = None) -> dt.datetime:
    """The time `value` names, offsets counted from `first`."""
    return time_point(value, flag=flag).at(first)


def _argparse_type(parse: Callable[[str], object], name: str, flag: str) -> Callable[[str], object]:
    def convert(text: str) -> object:
        try:
            return parse(text)
        except ConfigError as e:  # argparse names the flag itself: "argument --timeout: '5x': ..."
            raise argparse.ArgumentTypeError(str(e).removeprefix(f"{flag} ")) from None

    convert.__name__ = name  # argparse names the type in some messages
    return convert


def duration_arg(
    flag: str, *, bare: str | None = None, zero: bool = False, maximum: float | None = None, auto: bool = False,
    alias_of: str | None = None,
) -> Callable[[str], float | None]:
    """An argparse `type=` for a duration flag: seconds (a float). `auto`: the word `auto` gives
    None. `alias_of`: this flag is a deprecated name of that one (each use prints a note)."""

    def parse(text: str) -> float | None:
        if auto and text.strip().lower() == "auto":
            return None
        if alias_of:
            s = parse_duration(text, flag=flag, bare=bare, zero=zero, maximum=maximum, quiet=True)
            v = text.strip()
            deprecation_note(f"{flag} is a deprecated name; write {alias_of} {v}{bare if bare and is_bare_number(v) else ''}")
            return s
        return parse_duration(text, flag=flag, bare=bare, zero=zero, maximum=maximum)

    return _argparse_type(parse, "duration", flag)


def is_bare_number(text: str) -> bool:
    """A number without a unit."""
    m = _DURATION.match(text.lower())
    return bool(m and not m.group(2))


def time_point_arg(flag: str) -> Callable[[str], TimePoint]:
    """An argparse `type=` for `--start`/`--end`: a TimePoint."""
    return _argparse_type(lambda text: parse_time_point(text, flag=flag), "time", flag)


def add_duration_flag(
    parser, flag: str, *, default: str | None, help: str, bare: str = "s", zero: bool = False,
    maximum: float | None = None, auto: bool = False, deprecated: dict[str, str] | None = None,
    metavar: str = "DURATION",
) -> None:
    """Adds `flag` (its value a duration, `default` in the same form) and, hidden from --help,
    its deprecated names: {old name: the unit a bare number is read in under that name}.

    The one rule for a bare number, on every duration flag: it is read in the flag's former unit
    (`bare`: seconds, the unit of every time flag before units, unless the flag's old name said
    otherwise, as `--spin-lead-ms` did) and prints a deprecation note saying how to write it."""
    dest = flag.lstrip("-").replace("-", "_")
    parser.add_argument(
        flag, dest=dest, default=default, metavar=metavar, help=help,
        type=duration_arg(flag, bare=bare, zero=zero, maximum=maximum, auto=auto),
    )  # fmt: skip
    for old, old_bare in (deprecated or {}).items():
        parser.add_argument(
            old, dest=dest, default=argparse.SUPPRESS, help=argparse.SUPPRESS,
            type=duration_arg(old, bare=old_bare, zero=zero, maximum=maximum, auto=auto, alias_of=flag),
        )  # fmt: skip
