"""The leak check: planted PII must not survive anywhere on disk.

The demo and the tests plant known values (names, e-mails, phones) in the requests they send and
keep them in memory only. After recording, every column of every Parquet file (nested values
included) and every other file of a folder (logs, reports) is searched for them.

A planted value can legitimately appear on disk: substitutes are realistic, so the keyed
substitute of one request's name can be a name planted in another request. The check is exact
about that:

- where the request's body as sent is known (the demo keeps it in memory), a planted value found
  in that request's recorded body, its own or another request's, is a leak only where it
  survives at a place the sent body had it: elsewhere in the string it is made of keyed
  substitutes of other words (each word of a name has its own substitute, so two names side by
  side can come out as a third, planted in another request);
- otherwise, a planted value found in the row of the request it was planted in is a leak,
  always; found anywhere else (another row, a row whose request is unknown, a text file), it is a
  leak unless it is also a substitute the scrubber produces for some planted value of that kind.

A value is found where it stands as a whole word: "Ann Lee" inside the substitute "Joann Leeds"
is not Ann Lee. Rows are matched to requests by the `x-request-id` request header
(`REQUEST_ID_HEADER`), which the senders set and the recorder keeps in `request_headers`."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq

REQUEST_ID_HEADER = "x-request-id"


@dataclass(frozen=True)
class Planted:
    """One value planted in one request: `kind` is the scrubber's category (`person`, `email`,
    `phone`, ...), so the check can tell the substitutes the scrubber makes for it."""

    request: str
    kind: str
    value: str


@dataclass(frozen=True)
class Leak:
    value: str
    file: str
    column: str | None = None  # None for a non-Parquet file
    request: str | None = None  # the row's request (None: not known, or a text file)
    own_row: bool = False  # found in the row of the request it was planted in

    def __str__(self) -> str:
        where = self.file if self.column is None else f"{self.file}: column {self.column}"
        row = "" if self.column is None else (f", row of request {self.request}" if self.request else ", a row of no known request")
        why = " (the request it was planted in)" if self.own_row else ""
        return f"{where}{row}{why} holds planted value {self.value!r}"


@dataclass
class ScanResult:
    files: int = 0
    rows: int = 0
    request_rows: int = 0  # rows of the requests table
    columns: int = 0
    leaks: list[Leak] = field(default_factory=list)
    pii_counts: dict[str, int] = field(default_factory=dict)  # the scrubber's own counts


class LeakChecker:
    """Planted values and the substitutes the scrubber makes for them. `substitute(kind, value)`
    is the scrubber's keyed substitute (`Scrubber.substitute`); with it the check knows which
    planted values may appear as another value's substitute."""

    def __init__(self, planted: Iterable[Planted], substitute: Callable[[str, str], str],
                 originals: dict[str, object] | None = None):
        """`originals`: request id -> the JSON body as sent (in memory only). With it, a planted
        value found in a request's recorded body is a leak only where it survives at a place the
        sent body had it: the scrubber keeps every string's length, so the recorded string lines
        up with the sent one, and elsewhere the same words are other words' keyed substitutes (a
        name drawn for a German noun can be the planted name itself; "Walls Duran James Macias"
        the substitutes of two other names side by side)."""
        self.originals = originals or {}
        self.planted = list(planted)
        self._by_request: dict[str, set[str]] = {}
        for p in self.planted:
            if p.value:
                self._by_request.setdefault(p.request, set()).add(p.value.lower())
        self._needles = sorted({p.value.lower() for p in self.planted if p.value})
        self._substitutes = {substitute(p.kind, p.value).lower() for p in self.planted if p.value}

    def is_leak(self, value_lower: str, request: str | None) -> tuple[bool, bool]:
        """(leak, own_row) for a planted value found in the row of `request` (None: elsewhere)."""
        own = request is not None and value_lower in self._by_request.get(request, ())
        return own or value_lower not in self._substitutes, own

    def _scan(self, text: str, file: str, column: str | None, request: str | None) -> list[Leak]:
        out = []
        for needle in self._needles:
            if needle in text and find_word(needle, text):
                leak, own = self.is_leak(needle, request)
                if leak:
                    out.append(Leak(needle, file, column, request, own))
        return out

    def _scan_sent(self, text: str, file: str, request: str, recorded: object) -> list[Leak]:
        """A recorded request body whose body as sent is known: every planted value in it, judged
        by whether it survives where the sent body had it."""
        own = self._by_request.get(request, ())
        return [Leak(needle, file, "request_body", request, needle in own) for needle in self._needles
                if needle in text and find_word(needle, text) and survives(needle, self.originals[request], recorded) is not False]

    def scan_dataset(self, root: str | Path) -> ScanResult:
        """Every Parquet file under root, every column (strings, lists, maps, binary payloads),
        row by row, each row judged against its own request."""
        root = Path(root)
        res = ScanResult()
        counts: Counter[str] = Counter()
        for f in sorted(root.rglob("*.parquet")):
            table = pq.read_table(f)
            res.files += 1
            res.rows += table.num_rows
            if "requests" in f.relative_to(root).parts:
                res.request_rows += table.num_rows
            requests = _row_requests(table)
            for name in table.column_names:
                res.columns += 1
                values = table.column(name).to_pylist()
                if name == "pii_counts":
                    for m in values:
                        for k, v in m or []:
                            counts[k] += v or 0
                whole = _strings(values)
                if not any(n in whole for n in self._needles):
                    continue  # the common case: the column as a whole holds no planted value
                for req, v in zip(requests, values):
                    if name == "request_body" and req in self.originals:
                        found = self._scan_sent(_strings(v), str(f), req, v)
                    else:
                        found = self._scan(_strings(v), str(f), name, req)
                    res.leaks += found
        res.pii_counts = dict(counts)
        return res

    def scan_text_files(self, root: str | Path, max_bytes: int = 64 << 20) -> list[Leak]:
        """Every non-Parquet file under root (logs, JSON, HTML, text), read as text."""
        out: list[Leak] = []
        for f in sorted(Path(root).rglob("*")):
            if not f.is_file() or f.suffix == ".parquet":
                continue
            try:
                text = f.read_bytes()[:max_bytes].decode("utf-8", "replace").lower()
            except OSError:
                continue
            out += self._scan(text, str(f), None, None)
        return out


# What may stand right before a value found in a text file that is itself JSON: an escape
# (\n, \t, ..., \u00e9) ends in a letter or digit but is not part of the word.
_ESCAPE_BEFORE = re.compile(r"\\(?:[nrtbf]|u[0-9a-f]{4})$")


def survives(needle: str, original: object, recorded: str | None) -> bool | None:
    """Whether `needle` (lower case) is in the recorded JSON body at a place where the original body
    had it: True or False, or None when the two cannot be lined up (not JSON, another shape,
    a string of another length), which the caller takes as a leak."""
    try:
        rec = json.loads(recorded) if isinstance(recorded, str) else None
    except ValueError:
        return None
    pairs: list[tuple[str, str]] = []
    if rec is None or not _pair_strings(original, rec, pairs):
        return None
    n = len(needle)
    for o, r in pairs:
        lo = o.lower()
        i = lo.find(needle)
        while i >= 0:
            if find_word(needle, lo[max(0, i - 1):i + n + 1]) and r[i:i + n].lower() == needle:
                return True
            i = lo.find(needle, i + 1)
    return False


def _pair_strings(o, r, out: list[tuple[str, str]]) -> bool:
    if isinstance(o, str):
        if not isinstance(r, str) or len(o) != len(r):
            return False
        out.append((o, r))
        return True
    if isinstance(o, dict):
        return isinstance(r, dict) and o.keys() == r.keys() and all(_pair_strings(o[k], r[k], out) for k in o)
    if isinstance(o, list):
        return isinstance(r, list) and len(o) == len(r) and all(_pair_strings(a, b, out) for a, b in zip(o, r))
    return True


def find_word(needle: str, text: str) -> bool:
    """`needle` occurs in `text` with no letter or digit right before or after it."""
    i = text.find(needle)
    while i >= 0:
        j = i + len(needle)
        before_ok = i == 0 or not text[i - 1].isalnum() or _ESCAPE_BEFORE.search(text, max(0, i - 6), i) is not None
        if before_ok and (j == len(text) or not text[j].isalnum()):
            return True
        i = text.find(needle, i + 1)
    return False


def _strings(value) -> str:
    """Every string (and decoded binary) inside a cell, lower-cased, NUL-separated."""
    out: list[str] = []

    def walk(v) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, (bytes, bytearray)):
            out.append(bytes(v).decode("utf-8", "replace"))
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(k)
                walk(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)

    walk(value)
    return "\0".join(out).lower()


def _row_requests(table) -> list[str | None]:
    """Each row's request, from the `x-request-id` the sender set (None where there is none)."""
    if "request_headers" not in table.column_names:
        return [None] * table.num_rows
    out: list[str | None] = []
    for h in table.column("request_headers").to_pylist():
        try:
            out.append(json.loads(h).get(REQUEST_ID_HEADER) if h else None)
        except (ValueError, AttributeError):
            out.append(None)
    return out
