"""The recorder's options, declared once.

`OPTIONS` is the only place each option's name, type, default and help exist. From it come the
mitmproxy options (`shadowreplay_<name>`, declared in the addons' `load`), their checked values
(`read_values`, for `configure`), the `shadowreplay record` flags (`add_flags`), the `--set` list
that command gives mitmdump (`mitmdump_sets`), and the defaults RowOptions and the writer use
(`default`). Duration options carry their unit in the value (`60s`, `500ms`); a bare number is
seconds, as before units.

`key_file_source` holds the key-file checks: both `shadowreplay record` and the addon call it,
and neither reads the key; the writer that scrubs loads it once.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shadowreplay.durations import add_duration_flag, format_duration, parse_duration
from shadowreplay.errors import ConfigError

from .selection import SAMPLE_BY, format_rate, parse_rate
from .shape import KEEP_MODES

PREFIX = "shadowreplay_"
RECORDER = "recorder"  # owner: declared by the HTTP Recorder addon
GRPC = "grpc"  # owner: declared by the GrpcRecorder addon
WRITERS = ("process", "thread")
LOG_MODES = ("quiet", "verbose")


@dataclass(frozen=True)
class Option:
    name: str  # the mitmproxy option is PREFIX + name; the flag --name-with-dashes unless `flag`
    type: type  # int or str (a duration is a str in mitmproxy: it carries its unit)
    default: Any  # as mitmproxy holds it; a duration's in the same text form as the flag's
    help: str
    choices: tuple[str, ...] | None = None
    duration: bool = False  # seconds, written with a unit; must be > 0
    positive: bool = False  # an int that must be > 0
    path: bool = False  # a file or folder: the CLI passes it on absolute (an s3:// URL as given)
    flag: str | None = None  # the CLI flag when not --name-with-dashes
    old_flags: tuple[str, ...] = ()  # deprecated flag names (hidden from --help)
    flag_bare: str = "s"  # a duration flag: the unit of a bare number (with a note; shadowreplay/durations.py)
    metavar: str | None = None
    default_doc: str | None = None  # what an empty default means, for --help
    always_sent: bool = False  # `shadowreplay record` sets it on mitmdump's command line even at its default
    owner: str = RECORDER
    multiple: bool = False  # a list (Sequence[str] in mitmproxy): the flag may be repeated
    parse: Callable[[Any, str], Any] | None = None  # (value, label) -> the value as used; ConfigError
    show: Callable[[Any], str] = str  # a parsed value as mitmproxy's option text (with `parse`)
    port: bool = False  # an int 0-65535 (0: off)

    @property
    def option(self) -> str:
        return PREFIX + self.name

    @property
    def cli_flag(self) -> str:
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def dest(self) -> str:
        return self.cli_flag.lstrip("-").replace("-", "_")


OPTIONS: tuple[Option, ...] = (
    Option("out", str, "", "dataset folder or s3://bucket/prefix to write (OUT/requests/date=/hour=/*.parquet)",
           path=True, metavar="OUT", always_sent=True),
    Option("instance", str, "", "this recorder's id in a fleet writing one OUT: in its file names and "
           "OUT/recorder_status/INSTANCE.json", metavar="NAME", default_doc="host name, pid and a random suffix"),
    Option("key_file", str, "", "file holding the scrub key; never inside OUT", path=True, metavar="FILE",
           default_doc="env SHADOWREPLAY_SCRUB_KEY"),
    Option("keep", str, "text", "what rows keep: text (scrubbed bodies) or shape (no text at all: lengths, "
           "structure, prefix-block hashes; docs/anonymize.md)", choices=tuple(KEEP_MODES), always_sent=True),
    Option("prefix_chars", int, 1000, "prefix_hash covers the first N prompt characters", positive=True, metavar="N"),
    Option("body_cap", int, 1 << 20, "bytes of request body / characters of response text kept per row",
           positive=True, metavar="N"),
    Option("stream_cap", int, 16 << 20, "raw bytes of one streamed response kept for reassembly", positive=True,
           metavar="N"),
    Option("rotate_seconds", str, "60s", "start a new Parquet file after this long", duration=True, flag="--rotate",
           old_flags=("--rotate-seconds",)),
    Option("rotate_bytes", int, 64 << 20, "start a new Parquet file after this many buffered bytes", positive=True,
           metavar="N"),
    Option("queue_size", int, 10_000, "exchanges waiting for the writer; more are dropped and counted",
           positive=True, metavar="N"),
    Option("header_count_cap", int, 256, "headers of one message kept at most; over it they are not kept",
           positive=True, metavar="N"),
    Option("header_bytes_cap", int, 64 << 10, "header bytes of one message kept at most (name + value + 4 each); "
           "over it they are not kept", positive=True, metavar="N"),
    Option("metrics_url", str, "", "upstream Prometheus /metrics URL to sample into OUT/engine_metrics/",
           metavar="URL", default_doc="off"),
    Option("metrics_interval", str, "1s", "time between /metrics samples", duration=True),
    Option("writer", str, "process", "where scrubbing and Parquet writing run: process (a child process fed "
           "through a pipe, off the proxy's GIL) or thread (a thread inside mitmproxy)", choices=WRITERS),
    Option("log", str, "quiet", "quiet: mitmproxy's line per connection and the metrics poll's line per sample are "
           "left out of the log (warnings and the recorder's own lines stay); verbose: they are not",
           choices=LOG_MODES),
    Option("grpc_max_message", int, 4 << 20, "gRPC messages longer than this many bytes are counted and timed, "
           "not kept", positive=True, metavar="N", owner=GRPC),
    # --- production: sampling, filters, the recorder's own metrics (docs/recorder.md) ---
    Option("sample", str, "100%", "record this share of the traffic, by --sample-by (10%, 0.1)", metavar="RATE",
           parse=parse_rate, show=format_rate),
    Option("sample_by", str, "conversation", "what a sampled unit is: conversation (its turns kept together), "
           "client, or request", choices=SAMPLE_BY),
    Option("session_header", str, "x-session-id", "request header naming the conversation (when present) for "
           "--sample-by conversation", metavar="NAME"),
    *(Option(f"{way}_{what}", Sequence[str], [], f"{way} requests whose {doc}", multiple=True, metavar=mv)
      for what, doc, mv in (("path", "path (without query) matches this glob", "GLOB"),
                            ("host", "host (port ignored) matches this glob", "GLOB"),
                            ("header", "header NAME has a value matching REGEX", "NAME=REGEX"),
                            ("client", "client is this client_id (c_...) or in this IP network", "CLIENT"))
      for way in ("include", "exclude")),
    Option("metrics_port", int, 0, "serve the recorder's own Prometheus metrics on this port", port=True,
           metavar="PORT", default_doc="off"),
    Option("metrics_host", str, "127.0.0.1", "address the recorder's own metrics listen on", metavar="HOST"),
)
BY_NAME: dict[str, Option] = {o.name: o for o in OPTIONS}


def seconds(value: str, label: str) -> float:
    """A duration option's value in seconds: `60s`, `500ms`; a bare number is seconds."""
    return parse_duration(value, flag=label, bare="s", quiet=True)


def check(opt: Option, value: Any, label: str | None = None) -> Any:
    """`value` as the recorder uses it (a duration in seconds); ConfigError naming `label`."""
    label = label or opt.option
    if opt.duration:
        return seconds(value, label)
    if opt.parse is not None:
        return opt.parse(value, label)
    if opt.multiple:
        return list(value or ())
    if opt.port and not 0 <= value <= 65535:
        raise ConfigError(f"{label} {value}: a port 1-65535, or 0 for off")
    if opt.positive and value <= 0:
        raise ConfigError(f"{label} must be > 0")
    if opt.choices is not None and value not in opt.choices:
        raise ConfigError(f"{label} {value!r}: one of {', '.join(opt.choices)}")
    return value


def default(name: str) -> Any:
    """The option's default as the recorder uses it (a duration in seconds)."""
    opt = BY_NAME[name]
    return check(opt, opt.default)


# --- mitmproxy ---
def add_mitmproxy_options(loader: Any, owner: str = RECORDER) -> None:
    """Declares `owner`'s options, for an addon's `load(loader)`."""
    for o in OPTIONS:
        if o.owner == owner:
            help = o.help[0].upper() + o.help[1:] + "."
            if o.duration:
                help += " A duration: 60s, 500ms; a bare number is seconds."
            loader.add_option(o.option, o.type, o.default, help, choices=list(o.choices) if o.choices else None)


def read_values(options: Any, owner: str = RECORDER) -> dict[str, Any]:
    """{name: checked value} of `owner`'s options from mitmproxy's `ctx.options`; raises
    mitmproxy's OptionsError with one line for a bad value."""
    from mitmproxy.exceptions import OptionsError

    values: dict[str, Any] = {}
    for o in OPTIONS:
        if o.owner == owner:
            try:
                values[o.name] = check(o, getattr(options, o.option))
            except ConfigError as e:
                raise OptionsError(str(e)) from None
    return values


def refuse(error: Exception, running: bool, log: logging.Logger) -> None:
    """An addon's `configure` failed. Once running (a value set in mitmweb or the console):
    OptionsError, so mitmproxy refuses the value and keeps the old one. At start-up: one logged
    line instead of the traceback mitmproxy logs for a script's exception; an error logged during
    start-up makes mitmdump exit 1."""
    from mitmproxy.exceptions import OptionsError

    text = str(error) or type(error).__name__
    if running:
        raise OptionsError(f"shadowreplay recorder: {text}") from None
    log.error("shadowreplay recorder: %s", text)


# --- shadowreplay record ---
def _positive_int() -> Callable[[str], int]:
    def convert(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if n <= 0:
            raise argparse.ArgumentTypeError(f"{text!r}: must be > 0")
        return n

    convert.__name__ = "number"
    return convert


def _parsed(o: Option) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return o.parse(text, o.cli_flag)
        except ConfigError as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    convert.__name__ = o.name
    return convert


def _help(o: Option) -> str:
    text = o.help.replace("%", "%%")  # argparse formats help with %
    if o.multiple:
        return f"{text} (repeatable)"
    if o.default_doc:
        return f"{text} (default: {o.default_doc})"
    if o.default == "":
        return text
    return f"{text} (default %(default)s)"


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Adds one flag per option to `shadowreplay record`."""
    for o in OPTIONS:
        if o.duration:
            add_duration_flag(parser, o.cli_flag, default=o.default, bare=o.flag_bare, help=_help(o),
                              deprecated={old: "s" for old in o.old_flags})  # fmt: skip
            continue
        kw: dict[str, Any] = {"dest": o.dest, "default": o.default, "help": _help(o), "metavar": o.metavar}
        if o.multiple:
            kw["action"] = "append"
        elif o.parse is not None:
            kw["type"] = _parsed(o)
        elif o.choices is not None:
            kw["choices"] = list(o.choices)
        elif o.positive:
            kw["type"] = _positive_int()
        else:
            kw["type"] = o.type
        parser.add_argument(o.cli_flag, *o.old_flags, **kw)


def as_given(value: str) -> str:
    """A path option as the addon gets it: an s3:// URL as given, a local path absolute."""
    from shadowreplay.storage import is_remote

    return value if is_remote(value) else str(Path(value).expanduser().resolve())


def mitmdump_sets(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(mitmproxy option, value) for each option that differs from its default (or is always
    sent), from the parsed flags of `shadowreplay record`."""
    sets = []
    for o in OPTIONS:
        value = getattr(args, o.dest)
        if o.multiple:
            sets += [(o.option, str(v)) for v in value or ()]
            continue
        if o.duration or o.parse is not None:
            if value == default(o.name) and not o.always_sent:
                continue
            text = format_duration(value) if o.duration else o.show(value)
        else:
            if value == o.default and not o.always_sent:
                continue
            text = as_given(value) if o.path and value else str(value)
        sets.append((o.option, text))
    return sets


# --- the scrub key ---
def key_file_source(key_file: str | None, out: Any, *, where: str = "the output folder",
                    environ: Mapping[str, str] = os.environ) -> str | None:  # fmt: skip
    """The key file as an absolute path, or None where the key comes from $SHADOWREPLAY_SCRUB_KEY;
    refuses (ConfigError) a key file inside `out` (a local folder; an s3:// one holds no key file)
    and a missing key, without reading the key. `where` names `out` in the message."""
    from shadowreplay.anonymize.keys import check_key

    if not key_file:
        check_key(None, environ=environ)
        return None
    kf = Path(key_file).expanduser().resolve()
    if isinstance(out, Path):
        o = out.expanduser().resolve()
        if kf == o or o in kf.parents:
            raise ConfigError(f"the key file {kf} is inside {where} {o}; keep keys away from the data")
    check_key(kf, environ=environ)
    return str(kf)
