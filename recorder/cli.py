"""`shadowreplay record`: runs mitmdump in reverse-proxy mode with the recorder addon."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from pathlib import Path

from shadowreplay import fleet
from shadowreplay.storage import is_remote, location

from . import options


def addon_path() -> Path:
    """The script to give mitmproxy's -s (inside the installed package)."""
    return Path(__file__).resolve().parent / "record_addon.py"


def mitmdump_command() -> list[str]:
    """mitmdump from the same environment as this Python."""
    exe = Path(sys.executable).parent / "mitmdump"
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-c", "import sys; from mitmproxy.tools.main import mitmdump; sys.exit(mitmdump())"]


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "record",
        help="record gateway traffic (scrubbed) to Parquet through a reverse proxy",
        description="Runs mitmdump in reverse-proxy mode in front of --upstream with the recorder addon. "
        "Clients talk to --listen-host:--listen-port; every exchange becomes one row in OUT/requests/. "
        "Each recorder flag is the mitmproxy option shadowreplay_<name> (docs/recorder.md).",
    )
    p.add_argument("--upstream", help="the server to forward to, e.g. http://127.0.0.1:8000")
    p.add_argument("--listen-host", default="127.0.0.1", help="address to listen on (default %(default)s)")
    p.add_argument("--listen-port", type=int, default=8080, help="port to listen on (default %(default)s)")
    options.add_flags(p)
    p.add_argument("--verbose", dest="log", action="store_const", const="verbose", default=argparse.SUPPRESS,
                   help="the same as --log verbose")
    p.add_argument("--mitm-opt", action="append", default=[], metavar="NAME=VALUE", help="extra mitmproxy --set option")
    p.add_argument("--print-addon-path", action="store_true", help="print the addon script path for mitmdump -s, and exit")
    p.set_defaults(func=run)


def build_command(args: argparse.Namespace) -> list[str]:
    sets = [
        *options.mitmdump_sets(args),
        ("flow_detail", "0"),  # no per-flow console output (it would print request lines)
        # connect upstream per request: an unreachable upstream then yields a 502 and a row with the
        # error, instead of a silently closed client connection (mitmproxy's eager default)
        ("connection_strategy", "lazy"),
    ]
    cmd = mitmdump_command() + [
        "--mode",
        f"reverse:{args.upstream}",
        "--listen-host",
        args.listen_host,
        "--listen-port",
        str(args.listen_port),
        "-s",
        str(addon_path()),
    ]
    for k, v in sets:
        cmd += ["--set", f"{k}={v}"]
    for extra in args.mitm_opt:
        cmd += ["--set", extra]
    return cmd


def _validate(args: argparse.Namespace) -> None:
    from shadowreplay.errors import ConfigError

    if not args.upstream:
        raise ConfigError("--upstream is required (e.g. --upstream http://127.0.0.1:8000)")
    if "://" not in args.upstream:
        raise ConfigError(f"--upstream {args.upstream!r} needs a scheme, e.g. http://{args.upstream}")
    if not args.out:
        raise ConfigError("--out is required (the dataset folder to write)")
    if not 0 < args.listen_port < 65536:
        raise ConfigError(f"--listen-port {args.listen_port}: must be 1-65535")
    if args.instance:
        fleet.check_instance(args.instance)
    out = location(options.as_given(args.out))
    if is_remote(args.out):
        out.check_bucket()  # a missing bucket, refused credentials: one line now
    elif out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} exists and is not a folder")
    options.key_file_source(args.key_file, out, where="--out")  # the writer loads the key, once
    _validate_production(args)


def _validate_production(args: argparse.Namespace) -> None:
    """Sampling, filters and the metrics port, checked as the addon will (ConfigError)."""
    from shadowreplay.errors import ConfigError

    from .selection import Selection

    values = {o.name: getattr(args, o.dest) for o in options.OPTIONS}
    for o in options.OPTIONS:
        if o.multiple:
            values[o.name] = list(values[o.name] or ())
    Selection.of(values)
    if not 0 <= args.metrics_port <= 65535:
        raise ConfigError(f"--metrics-port {args.metrics_port}: a port 1-65535")


def run(args: argparse.Namespace) -> int:
    if args.print_addon_path:
        print(addon_path())
        return 0
    if not args.instance:
        args.instance = fleet.default_instance()
    _validate(args)
    cmd = build_command(args)
    out = location(options.as_given(args.out))
    status = fleet.status_path(out, args.instance)
    print(
        f"shadowreplay record: http://{args.listen_host}:{args.listen_port} -> {args.upstream}; "
        f"instance {args.instance} writing {out}/requests/ (status: {status}). Ctrl-C to stop.",
        file=sys.stderr,
        flush=True,
    )
    # Own session: a terminal's Ctrl-C reaches only us, and we forward it exactly once.
    proc = subprocess.Popen(cmd, start_new_session=True)

    def forward(signum, _frame) -> None:
        if proc.poll() is None:
            proc.send_signal(signum)

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            try:
                rc = proc.wait()
                break
            except KeyboardInterrupt:  # pragma: no cover - handler above replaces SIGINT
                forward(signal.SIGINT, None)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    if rc not in (0, -signal.SIGINT, -signal.SIGTERM):
        print(f"shadowreplay record: mitmdump exited with status {rc}", file=sys.stderr)
        return rc if rc > 0 else 1
    if status.exists():
        print(f"shadowreplay record: stopped; see {status}", file=sys.stderr)
    return 0

