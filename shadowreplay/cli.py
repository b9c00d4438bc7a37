"""The `shadowreplay` console script. Each package registers its own subcommands; this module
only dispatches and turns user errors into one clear line and a non-zero exit."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from . import __version__
from .errors import ShadowReplayError

# (module, what it registers). Each module has `register(subparsers)`; heavy imports stay inside
# the command functions so `shadowreplay --help` is fast.
COMMAND_MODULES = (
    "shadowreplay.anonymize.cli",  # scrub
    "shadowreplay.recorder.cli",  # record
    "shadowreplay.replayer.cli",  # replay
    "shadowreplay.replayer.capacity_cli",  # capacity
    "shadowreplay.traces.cli",  # import, export
    "shadowreplay.analysis.cli",  # sql, analyze, compare, report
    "shadowreplay.shadow.cli",  # shadow up/down, demo
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shadowreplay",
        description="Record LLM gateway traffic (scrubbed), replay it into a shadow vLLM, analyze tail latency.",
    )
    parser.add_argument("--version", action="version", version=f"shadowreplay {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


# Commands of two words (`analyze anomalies`): registered as one name with a space, so each has
# its own parser, usage line and help; the two words on the command line are joined here.
TWO_WORD_COMMANDS = ("analyze anomalies",)


def _join_two_words(argv: list[str]) -> list[str]:
    for name in TWO_WORD_COMMANDS:
        first, second = name.split()
        for i, a in enumerate(argv):
            if not a.startswith("-"):
                if a == first and i + 1 < len(argv) and argv[i + 1] == second:
                    return argv[:i] + [name] + argv[i + 2:]
                break
    return argv


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = _join_two_words(list(sys.argv[1:] if argv is None else argv))
    args = parser.parse_args(argv)
    args.argv = argv  # the command line after the program name (`replay --shards N` runs it again per shard)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        rc = func(args)
    except ShadowReplayError as e:
        print(f"shadowreplay {args.command}: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print(f"shadowreplay {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
