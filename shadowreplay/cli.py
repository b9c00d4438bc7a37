"""The `shadowreplay` console script. Each package registers its own subcommands; this module
only dispatches and turns user errors into one clear line and a non-zero exit."""

from __future__ import annotations

import argparse
import difflib
import importlib
import logging
import sys

from . import __version__
from .errors import DatasetError, ShadowReplayError
from .readpolicy import SKIP_BAD_FILES, skipping_bad_files

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


class Parser(argparse.ArgumentParser):
    """Every parser of the command line (subcommands inherit the class): a usage error is one
    line, `PROG: error: ...`, exit status 2; an option it does not know is named, with the
    closest one it does (`unknown option --tagret; did you mean --target?`), even where a missing
    required option would otherwise be reported first."""

    _given: list[str] = []

    def parse_known_args(self, args=None, namespace=None):
        self._given = list(sys.argv[1:] if args is None else args)
        ns, extras = super().parse_known_args(args, namespace)
        if self._unknown_option(extras):  # a subcommand's parser: say it here, not as the parent's extras
            self.error("")
        return ns, extras

    def _unknown_option(self, tokens: list[str]) -> str | None:
        known = self._option_string_actions
        for t in tokens:
            if t == "--":
                break
            if not t.startswith("-") and self._subparsers is not None:
                break  # the command's own options are its parser's to judge
            if not t.startswith("-") or t == "-" or " " in t or self._negative_number_matcher.match(t):
                continue
            name = t.split("=", 1)[0]
            if name in known or (not name.startswith("--") and name[:2] in known):  # -c, -vv, -cQUERY
                continue
            if self.allow_abbrev and name.startswith("--") and any(o.startswith(name) for o in known):
                continue  # a prefix: argparse takes (or refuses as ambiguous) it
            return name
        return None

    def error(self, message: str):  # type: ignore[override]
        unknown = self._unknown_option(self._given)
        if unknown:
            close = difflib.get_close_matches(unknown, [o for o in self._option_string_actions if o.startswith("--")], n=1)
            message = f"unknown option {unknown}" + (f"; did you mean {close[0]}?" if close else f" (see {self.prog} --help)")
        else:
            message = f"{message} (see {self.prog} --help)"
        self.exit(2, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="shadowreplay",
        description="Record LLM gateway traffic (scrubbed), replay it into a shadow vLLM, analyze tail latency.",
    )
    parser.add_argument("--version", action="version", version=f"shadowreplay {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    for name in READING_COMMANDS:
        sub.choices[name].add_argument(
            SKIP_BAD_FILES, dest="skip_bad_files", action="store_true",
            help="leave out the dataset's unreadable Parquet files (each listed on stderr) instead of refusing the dataset")
    return parser


# Commands that read datasets: each takes --skip-bad-files (shadowreplay/readpolicy.py).
READING_COMMANDS = ("sql", "analyze", "analyze anomalies", "compare", "report", "replay", "capacity", "export")


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


def damaged_file_error(e: DatasetError) -> DatasetError:
    """When DuckDB failed to read the data and its message names no file (a damaged page header
    comes as `TProtocolException: Invalid data`), the error names the damaged file and
    --skip-bad-files instead; else `e` as it is."""
    from .readpolicy import accepted_files, engine_failed_reading, skip_bad_files

    if skip_bad_files() or SKIP_BAD_FILES in str(e) or not engine_failed_reading():
        return e
    from .dataset import find_damaged

    found = find_damaged(accepted_files())
    if found is None:
        return e
    return DatasetError(f"{found[0]}: {found[1]}; pass {SKIP_BAD_FILES} to read the other files without it")


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
        with skipping_bad_files(getattr(args, "skip_bad_files", False)):
            try:
                rc = func(args)
            except DatasetError as e:
                raise damaged_file_error(e) from None
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
