"""`shadowreplay import FORMAT FILE --out DIR` and `shadowreplay export FORMAT RECORDING --out FILE`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from shadowreplay.durations import deprecation_note, parse_time_point, time_point_arg
from shadowreplay.errors import ConfigError
from shadowreplay.storage import location

IMPORT_FORMATS = ("azure-llm", "burstgpt", "mooncake", "openai-jsonl")
EXPORT_FORMATS = ("mooncake", "guidellm")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("import", help="import a public trace (Azure LLM, BurstGPT, Mooncake, OpenAI JSONL) as a requests dataset",
                       description="Import a public LLM serving trace into a shadowreplay requests dataset. "
                       "Prompt text: exact to the recorded token count with --tokenizer; without it, "
                       "approximate (one word per token); --no-text writes timestamps and lengths only.")
    p.add_argument("format", choices=IMPORT_FORMATS, metavar="FORMAT", help=" | ".join(IMPORT_FORMATS))
    p.add_argument("file", type=Path, metavar="FILE", help="the trace file (.gz is read transparently)")
    p.add_argument("--out", type=location, required=True, metavar="DIR", help="dataset folder or s3://bucket/prefix to write")
    p.add_argument("--tokenizer", metavar="DIR_OR_URL",
                   help="tokenizer.json folder, or a vLLM server URL (its /tokenize): prompts get exactly prompt_tokens tokens")
    p.add_argument("--model", metavar="NAME", help="model name written into the rows and request bodies")
    p.add_argument("--chat", action="store_true", help="write chat requests (messages) instead of completions")
    p.add_argument("--no-text", action="store_true", help="timestamps and lengths only, no request bodies (fast path)")
    p.add_argument("--jitter-within-step", action="store_true",
                   help="spread timestamps bunched into steps (Mooncake: 3 s) uniformly and deterministically within their step")
    p.add_argument("--origin", default=None, metavar="ISO_TIME",
                   help="where relative timestamps (BurstGPT, Mooncake) are placed (default 2024-01-01T00:00:00Z)")
    p.add_argument("--start", type=time_point_arg("--start"), metavar="TIME",
                   help="import the rows from this time: ISO time or offset from the trace's first row (90s, 5m), as in replay")
    p.add_argument("--end", type=time_point_arg("--end"), metavar="TIME", help="...up to this time (exclusive), same forms as --start")
    p.add_argument("--limit", type=int, metavar="N", help="import the first N rows only")
    p.add_argument("--verify", choices=("sample", "all"), default="sample",
                   help="re-tokenize every 64th synthesized prompt (sample, default) or every one (all)")
    p.add_argument("--append", action="store_true", help="add to a dataset that already has requests")
    p.add_argument("--quiet", action="store_true", help="no per-row warnings (the summary still counts them)")
    p.set_defaults(func=cmd_import)

    e = sub.add_parser("export", help="export a requests dataset as Mooncake JSONL or GuideLLM replay input",
                       description="Export a recording (or an imported trace) for vLLM bench / AIPerf / SGLang (mooncake) or GuideLLM.")
    e.add_argument("format", choices=EXPORT_FORMATS, metavar="FORMAT", help=" | ".join(EXPORT_FORMATS))
    e.add_argument("recording", type=location, metavar="RECORDING", help="dataset folder or s3://bucket/prefix")
    e.add_argument("--out", type=Path, required=True, metavar="FILE", help="JSONL file to write")
    e.add_argument("--tokenizer", metavar="DIR_OR_URL", help="to compute hash_ids from the prompts (and unknown lengths)")
    e.add_argument("--model", metavar="NAME", help="model name for a vLLM /tokenize URL")
    e.add_argument("--recompute-hashes", action="store_true", help="compute hash_ids from the prompts even when the rows carry them")
    e.add_argument("--no-hash-ids", action="store_true", help="write no hash_ids")
    e.set_defaults(func=cmd_export)


RELATIVE_FORMATS = ("burstgpt", "mooncake")  # timestamps counted from the trace's start, placed at --origin


def _origin_us(s: str | None) -> int:
    from .importer import DEFAULT_START

    try:
        origin = parse_time_point(s or DEFAULT_START, flag="--origin").absolute
    except ConfigError:
        origin = None
    if origin is None:
        raise ConfigError(f"--origin {s!r}: give an ISO time, e.g. 2024-01-01T00:00:00Z")
    return round(origin.timestamp() * 1_000_000)


def cmd_import(args) -> int:
    from .base import Report
    from .importer import ImportOptions, run_import
    from .tokenizer import open_tokenizer

    if args.no_text and args.tokenizer and args.format != "openai-jsonl":
        raise ConfigError("--no-text and --tokenizer contradict each other")
    if args.limit is not None and args.limit < 0:
        raise ConfigError("--limit must be >= 0")
    origin, start = args.origin, args.start
    if start is not None and start.absolute is not None and origin is None and args.format in RELATIVE_FORMATS:
        # before --origin, --start ISO_TIME placed relative timestamps; it keeps that meaning for now
        deprecation_note(f"import --start {start.text} places the trace; write --origin {start.text} "
                         "(--start with --origin selects the rows from that time)")
        origin, start = start.text, None
    tok = open_tokenizer(args.tokenizer, args.model) if args.tokenizer else None
    text = "none" if args.no_text else ("exact" if tok is not None else "approx")
    report = Report(quiet=args.quiet)
    o = ImportOptions(fmt=args.format, path=args.file, out=args.out, tokenizer=tok, text=text, model=args.model,
                      chat=args.chat, jitter_within_step=args.jitter_within_step, start_us=_origin_us(origin),
                      start=start, end=args.end, limit=args.limit, append=args.append, verify=args.verify)
    run_import(o, report)
    print(f"import {args.format} {args.file.name} -> {args.out}: {report.summary()}", file=sys.stderr)
    return 0


def cmd_export(args) -> int:
    from .base import Report
    from .export import ExportOptions, run_export
    from .tokenizer import open_tokenizer

    tok = open_tokenizer(args.tokenizer, args.model) if args.tokenizer else None
    report = Report()
    run_export(ExportOptions(fmt=args.format, recording=args.recording, out=args.out, tokenizer=tok,
                             recompute_hashes=args.recompute_hashes, hash_ids=not args.no_hash_ids), report)
    print(f"export {args.format} {args.recording} -> {args.out}: {report.summary()}", file=sys.stderr)
    return 0
