"""JUnit XML for the gates (`--junit FILE` on analyze, compare and capacity): one testsuite, one
testcase per gate; a failing gate is a <failure>, insufficient data too (with its own type), each
with the gate's message. CI systems (GitHub Actions reporters, GitLab's `artifacts:reports:junit`,
Jenkins) render it."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from .expr import FAIL, GateResult


def to_xml(suite: str, results: Sequence[GateResult]) -> ET.ElementTree:
    failures = sum(1 for r in results if not r.passed)
    root = ET.Element("testsuites", name="shadowreplay", tests=str(len(results)), failures=str(failures), errors="0")
    ts = ET.SubElement(root, "testsuite", name=suite, tests=str(len(results)), failures=str(failures), errors="0",
                       skipped="0", time="0")
    for r in results:
        tc = ET.SubElement(ts, "testcase", name=r.expr.text, classname=f"shadowreplay.{suite}", time="0")
        if not r.passed:
            f = ET.SubElement(tc, "failure", message=r.message,
                              type="GateFailed" if r.outcome == FAIL else "InsufficientData")
            f.text = r.message
        else:
            ET.SubElement(tc, "system-out").text = r.message
    ET.indent(root)
    return ET.ElementTree(root)


def write_junit(path: str | os.PathLike, suite: str, results: Sequence[GateResult]) -> None:
    """Writes the gates of `suite` (e.g. "compare") to `path` as JUnit XML (UTF-8)."""
    to_xml(suite, results).write(path, encoding="utf-8", xml_declaration=True)
