"""A cap on JSON nesting depth, checked on the raw bytes before they are parsed.

A hostile body such as `[[[[...]]]]` a million levels deep makes a recursive parser raise (or
the walk after it recurse without end). The recorder checks each body first and does not parse
one nested deeper than JSON_DEPTH_CAP: the row records why, and the body is scrubbed as text."""

from __future__ import annotations

import re

JSON_DEPTH_CAP = 128  # levels of [ and {; real LLM requests (tool schemas included) stay far below

# A whole JSON string (escapes included) or one bracket; strings are skipped in one match, so
# brackets inside them do not count.
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_OPEN = frozenset(b"[{")


def deeper_than(data: bytes, cap: int = JSON_DEPTH_CAP) -> bool:
    """True when the JSON text `data` nests more than `cap` levels of arrays and objects."""
    if data.count(b"[") + data.count(b"{") <= cap:
        return False  # not enough brackets to get there: most bodies end here
    depth = 0
    for m in _TOKEN.finditer(data):
        c = data[m.start()]
        if c in _OPEN:
            depth += 1
            if depth > cap:
                return True
        elif c != 0x22:  # a closing bracket (0x22 is '"': a string)
            depth -= 1
    return False
