"""Scrub text inside protobuf messages without their schema, pure.

The wire format is walked field by field. Varints and fixed32/64 are numbers and stay as they
are. A length-delimited field is one of: an embedded message, a string, bytes or a packed
repeated scalar; without the schema we guess:

1. If the payload parses completely as a plausible message it is walked as one, recursively
   (depth bounded), unless it also reads as plain printable text: then it is scrubbed as text,
   which is the privacy-safe reading of an ambiguous field.
2. Otherwise, if it decodes as UTF-8, it is a string and goes through the text scrubber.
3. Otherwise it is bytes. Bytes are scrubbed through a latin-1 view (one char per byte), so an
   e-mail address inside a binary blob is still caught while the byte length never changes.

A scrubbed string may change its UTF-8 byte length (substitutes keep the character length,
not the byte length), so every length prefix on the way up is re-encoded. Fields that did not
change are copied byte for byte, so a message without PII comes out identical.

Nothing here raises on bad input: garbage is treated as bytes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

# A text scrubber: returns the substitute text (same number of characters) and counts by kind.
TextScrub = Callable[[str], tuple[str, Mapping[str, int]]]

MAX_DEPTH = 24
_MAX_FIELD = (1 << 29) - 1


@dataclass
class ScrubResult:
    data: bytes
    counts: Counter = field(default_factory=Counter)

    @property
    def changed(self) -> bool:
        return sum(self.counts.values()) > 0


def _read_varint(buf: bytes, pos: int, end: int) -> tuple[int, int] | None:
    result = 0
    shift = 0
    while pos < end and shift < 70:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result, pos) if result < (1 << 64) else None
        shift += 7
    return None


def encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


# (tag_start, value_start, value_end, wire_type)
_Field = tuple[int, int, int, int]


def parse_fields(buf: bytes, start: int = 0, end: int | None = None) -> list[_Field] | None:
    """The fields of a message occupying buf[start:end], or None unless it parses completely.

    Groups (wire types 3/4) are rejected: long deprecated, and accepting them makes random
    text parse as a message far too often."""
    end = len(buf) if end is None else end
    pos = start
    fields: list[_Field] = []
    while pos < end:
        tag_start = pos
        r = _read_varint(buf, pos, end)
        if r is None:
            return None
        tag, pos = r
        number, wt = tag >> 3, tag & 7
        if number == 0 or number > _MAX_FIELD:
            return None
        if wt == 0:
            r = _read_varint(buf, pos, end)
            if r is None:
                return None
            vstart, pos = pos, r[1]
        elif wt == 1:
            vstart, pos = pos, pos + 8
        elif wt == 5:
            vstart, pos = pos, pos + 4
        elif wt == 2:
            r = _read_varint(buf, pos, end)
            if r is None:
                return None
            length, vstart = r
            pos = vstart + length
        else:
            return None
        if pos > end:
            return None
        fields.append((tag_start, vstart, pos, wt))
    return fields


def _is_plain_text(s: str) -> bool:
    return all(c.isprintable() or c in "\t\n\r" for c in s)


def _scrub_text_bytes(raw: bytes, scrub: TextScrub, counts: Counter) -> bytes:
    try:
        text = raw.decode("utf-8")
        enc = "utf-8"
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
        enc = "latin-1"
    try:
        new, c = scrub(text)
    except Exception:  # a scrubber bug must not let the raw text through: drop it instead
        counts["scrub_error"] += 1
        return b"\x00" * len(raw) if enc == "latin-1" else ("?" * len(text)).encode()
    if new == text:
        return raw
    counts.update({k: v for k, v in c.items() if v})
    if enc == "latin-1":
        return new.encode("latin-1", errors="replace")  # '?' for wider chars: same byte count
    return new.encode("utf-8")


def _scrub_value(buf: bytes, start: int, end: int, scrub: TextScrub, counts: Counter, depth: int) -> bytes:
    """Scrubbed bytes of a length-delimited payload buf[start:end]."""
    if start == end:
        return b""
    fields = parse_fields(buf, start, end) if depth < MAX_DEPTH else None
    if fields is not None:
        raw = buf[start:end]
        try:
            as_text = raw.decode("utf-8")
        except UnicodeDecodeError:
            as_text = None
        if as_text is None or not _is_plain_text(as_text):
            return _scrub_fields(buf, start, end, fields, scrub, counts, depth + 1)
    return _scrub_text_bytes(buf[start:end], scrub, counts)


def _scrub_fields(
    buf: bytes, start: int, end: int, fields: list[_Field], scrub: TextScrub, counts: Counter, depth: int
) -> bytes:
    out = bytearray()
    copied_to = start  # buf[start:copied_to] has been emitted unchanged
    for tag_start, vstart, vend, wt in fields:
        if wt != 2:
            continue
        new = _scrub_value(buf, vstart, vend, scrub, counts, depth)
        if new == buf[vstart:vend]:
            continue
        out += buf[copied_to:tag_start]
        # tag varint ends where the length varint starts: re-read the tag to find it
        _, len_pos = _read_varint(buf, tag_start, vstart)  # type: ignore[misc]
        out += buf[tag_start:len_pos]
        out += encode_varint(len(new))
        out += new
        copied_to = vend
    if copied_to == start:
        return buf[start:end]
    out += buf[copied_to:end]
    return bytes(out)


def scrub_message(data: bytes, scrub: TextScrub) -> ScrubResult:
    """Scrubs a serialized protobuf message (a gRPC message payload) without its schema.

    A payload that does not parse as a message is scrubbed as text/bytes as a whole."""
    counts: Counter = Counter()
    data = bytes(data)
    fields = parse_fields(data)
    if fields is None:
        return ScrubResult(_scrub_text_bytes(data, scrub, counts), counts)
    return ScrubResult(_scrub_fields(data, 0, len(data), fields, scrub, counts, 1), counts)
