"""`shadowreplay record`: runs mitmdump in reverse-proxy mode with the recorder addon."""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from pathlib import Path

from shadowreplay import fleet
from shadowreplay.durations import add_duration_flag, format_duration
from shadowreplay.storage import is_remote, location

from .shape import KEEP_MODES


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
        "Clients talk to --listen-host:--listen-port; every exchange becomes one row in OUT/requests/.",
    )
    p.add_argument("--upstream", help="the server to forward to, e.g. http://127.0.0.1:8000")
    p.add_argument("--listen-host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--listen-port", type=int, default=8080, help="port to listen on (default 8080)")
    p.add_argument("--out", help="dataset folder or s3://bucket/prefix to write (OUT/requests/date=/hour=/*.parquet)")
    p.add_argument("--instance", help="this recorder's id in a fleet writing one --out: in its file names and "
                   "OUT/recorder_status/INSTANCE.json (default: host name, pid and a random suffix)")
    p.add_argument("--key-file", help="scrub key file (else env SHADOWREPLAY_SCRUB_KEY); never inside --out")
    p.add_argument("--metrics-url", help="upstream Prometheus /metrics URL to sample into OUT/engine_metrics/")
    add_duration_flag(p, "--metrics-interval", default="1s", bare="s", help="time between /metrics samples (default 1s)")
    p.add_argument("--keep", choices=list(KEEP_MODES), default="text",
                   help="text: scrubbed bodies (default); shape: no text at all, only lengths, structure and "
                        "prefix-block hashes (docs/anonymize.md)")
    p.add_argument("--prefix-chars", type=int, default=1000, help="prefix_hash covers the first N prompt chars")
    p.add_argument("--body-cap", type=int, default=1 << 20, help="bytes of body / chars of text kept per row")
    add_duration_flag(p, "--rotate", default="60s", deprecated={"--rotate-seconds": "s"},
                      help="start a new Parquet file after DURATION (default 60s)")
    p.add_argument("--rotate-bytes", type=int, default=64 << 20, help="new Parquet file after this many bytes")
    p.add_argument("--queue-size", type=int, default=10_000, help="exchanges waiting for the writer before drops")
    p.add_argument(
        "--writer",
        choices=["process", "thread"],
        default=None,
        help="where scrubbing and writing run: a child process or a thread in the proxy (default: the addon's)",
    )
    p.add_argument("--mitm-opt", action="append", default=[], metavar="NAME=VALUE", help="extra mitmproxy --set option")
    p.add_argument("--print-addon-path", action="store_true", help="print the addon script path for mitmdump -s, and exit")
    p.set_defaults(func=run)


def _out(out: str) -> str:
    """--out as the addon gets it: an s3:// URL as given, a local folder absolute."""
    return out if is_remote(out) else str(Path(out).expanduser().resolve())


def build_command(args: argparse.Namespace) -> list[str]:
    sets = {
        "shadowreplay_out": _out(args.out),
        "shadowreplay_prefix_chars": args.prefix_chars,
        "shadowreplay_keep": getattr(args, "keep", "text"),
        "shadowreplay_body_cap": args.body_cap,
        "shadowreplay_rotate_seconds": format_duration(args.rotate),
        "shadowreplay_rotate_bytes": args.rotate_bytes,
        "shadowreplay_queue_size": args.queue_size,
        "flow_detail": 0,  # no per-flow console output (it would print request lines)
        # connect upstream per request: an unreachable upstream then yields a 502 and a row with the
        # error, instead of a silently closed client connection (mitmproxy's eager default)
        "connection_strategy": "lazy",
    }
    if args.key_file:
        sets["shadowreplay_key_file"] = str(Path(args.key_file).expanduser().resolve())
    if getattr(args, "instance", None):
        sets["shadowreplay_instance"] = args.instance
    if getattr(args, "writer", None):
        sets["shadowreplay_writer"] = args.writer
    if args.metrics_url:
        sets["shadowreplay_metrics_url"] = args.metrics_url
        sets["shadowreplay_metrics_interval"] = format_duration(args.metrics_interval)
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
    for k, v in sets.items():
        cmd += ["--set", f"{k}={v}"]
    for extra in args.mitm_opt:
        cmd += ["--set", extra]
    return cmd


def _validate(args: argparse.Namespace) -> None:
    from shadowreplay.anonymize import load_key
    from shadowreplay.errors import ConfigError

    if not args.upstream:
        raise ConfigError("--upstream is required (e.g. --upstream http://127.0.0.1:8000)")
    if "://" not in args.upstream:
        raise ConfigError(f"--upstream {args.upstream!r} needs a scheme, e.g. http://{args.upstream}")
    if not args.out:
        raise ConfigError("--out is required (the dataset folder to write)")
    if getattr(args, "instance", None):
        fleet.check_instance(args.instance)
    if is_remote(args.out):
        location(args.out).check_bucket()  # a missing bucket, refused credentials: one line now
        load_key(args.key_file)
        _check_sizes(args)
        return
    out = Path(args.out).expanduser().resolve()
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} exists and is not a folder")
    if args.key_file:
        kf = Path(args.key_file).expanduser().resolve()
        if kf == out or out in kf.parents:
            raise ConfigError(f"the key file {kf} is inside --out {out}; keep keys away from the data")
    load_key(args.key_file)  # raises ConfigError with a clear message
    _check_sizes(args)


def _check_sizes(args: argparse.Namespace) -> None:
    from shadowreplay.errors import ConfigError

    for name in ("prefix_chars", "body_cap", "rotate_bytes", "queue_size", "listen_port"):
        if getattr(args, name) <= 0:
            raise ConfigError(f"--{name.replace('_', '-')} must be > 0")


def run(args: argparse.Namespace) -> int:
    if args.print_addon_path:
        print(addon_path())
        return 0
    if not args.instance:
        args.instance = fleet.default_instance()
    _validate(args)
    cmd = build_command(args)
    out = location(_out(args.out))
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

