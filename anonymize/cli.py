"""`shadowreplay scrub`: JSON Lines in, one scrubbed JSON value per line out, same order."""

from __future__ import annotations

import argparse
import sys
from typing import BinaryIO


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "scrub",
        help="scrub PII from JSON Lines (stdin -> stdout)",
        description=(
            "Read JSON Lines, write one scrubbed JSON value per line in the same order. A line that "
            "is not JSON is scrubbed as text and written as a JSON string (with a warning). The key "
            "comes from --key-file or $SHADOWREPLAY_SCRUB_KEY; there is no default key."
        ),
    )
    p.add_argument("--key-file", metavar="F", help="file holding the scrub key (keep it away from the data)")
    p.add_argument("--input", metavar="F", help="JSON Lines file to read (default: stdin)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from shadowreplay.errors import ConfigError

    from .keys import load_key
    from .scrubber import Scrubber

    scrubber = Scrubber(load_key(args.key_file))
    if args.input:
        try:
            src: BinaryIO = open(args.input, "rb")
        except OSError as e:
            raise ConfigError(f"cannot read {args.input}: {e.strerror}") from None
    else:
        src = sys.stdin.buffer
    try:
        scrub_stream(scrubber, src, sys.stdout.buffer, sys.stderr)
    finally:
        if args.input:
            src.close()
    return 0


def scrub_stream(scrubber, src: BinaryIO, dst: BinaryIO, err) -> tuple[int, int]:
    """Scrub src line by line into dst. Returns (lines, warnings). Never echoes input to `err`."""
    import json
    import os

    lines = warnings = 0
    # a pipe or terminal gets each line as soon as it is scrubbed; a file is written in blocks
    try:
        interactive = not os.path.isfile(f"/proc/self/fd/{src.fileno()}")
    except (AttributeError, OSError, ValueError):
        interactive = True
    for lineno, raw in enumerate(src, 1):
        lines += 1
        line = raw.rstrip(b"\r\n")
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            text = line.decode("utf-8", errors="replace")
            print(f"shadowreplay scrub: warning: line {lineno} is not valid UTF-8; decoded with replacement characters", file=err)
            warnings += 1
        try:
            value = json.loads(text)
            is_json = True
        except RecursionError:
            is_json = False
        except ValueError:
            is_json = False
        if is_json:
            try:
                scrubbed, _ = scrubber.scrub_tree(value, inplace=True)  # our own parsed value
                out = json.dumps(scrubbed, ensure_ascii=False, separators=(",", ":"))
            except RecursionError:
                is_json = False
        if not is_json:
            print(f"shadowreplay scrub: warning: line {lineno} is not JSON; scrubbed as text", file=err)
            warnings += 1
            out = json.dumps(scrubber.scrub_text(text).text, ensure_ascii=False)
        dst.write(out.encode("utf-8", "surrogatepass") + b"\n")
        if interactive:
            dst.flush()
    dst.flush()
    return lines, warnings
