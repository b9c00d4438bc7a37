"""docs/ci.md stays true: its workflows are valid YAML, and every `shadowreplay` command on the
page (in the plain blocks, GitHub's `run:` steps and GitLab's `script:`) parses with the real
argument parser, its gates and SLOs with the real expression parser."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml

from shadowreplay.analysis import expr, gates
from shadowreplay.analysis.units import parse_slo
from shadowreplay.cli import _join_two_words, build_parser

DOC = Path(__file__).resolve().parent.parent / "docs" / "ci.md"


def _blocks() -> list[tuple[str, str]]:
    return re.findall(r"```(\w*)\n(.*?)```", DOC.read_text(), re.S)


def _shell_texts() -> list[str]:
    out = []
    for lang, body in _blocks():
        if lang != "yaml":
            out.append(body)
            continue
        doc = yaml.safe_load(body)
        jobs = doc.get("jobs", {"": doc}) if "jobs" in doc else doc
        for job in jobs.values():
            for step in job.get("steps", []):
                if "run" in step:
                    out.append(step["run"])
            out += [s for s in job.get("script", []) + job.get("after_script", [])]
    return out


def _commands() -> list[list[str]]:
    cmds = []
    for text in _shell_texts():
        for line in text.replace("\\\n", " ").splitlines():
            line = line.strip()
            if not line.startswith("shadowreplay "):
                continue
            argv = shlex.split(line)[1:]
            for i, a in enumerate(argv):  # `...; echo "exit $?"`: the command ends at the `;`
                if a.endswith(";"):
                    argv = argv[:i] + [a[:-1]]
                    break
            cmds.append(argv)
    return cmds


def test_workflows_are_yaml_with_the_gate_steps():
    yamls = [yaml.safe_load(b) for lang, b in _blocks() if lang == "yaml"]
    assert len(yamls) == 2
    gh, gl = yamls
    steps = gh["jobs"]["shadow-replay"]["steps"]
    assert any("--fail-on" in s.get("run", "") for s in steps)
    assert any(s.get("if") == "always()" and "junit" in s.get("uses", "") for s in steps)
    assert gl["latency-gate"]["artifacts"]["reports"]["junit"] == ["gates.xml", "slo.xml"]


def test_every_command_parses():
    parser = build_parser()
    cmds = _commands()
    assert len(cmds) >= 15, cmds
    seen = set()
    for argv in cmds:
        args = parser.parse_args(_join_two_words(list(argv)))
        seen.add(args.command)
        expr.parse_all(getattr(args, "asserts", None) or [], flag="--assert")
        fail_on = expr.parse_all(getattr(args, "fail_on", None) or [], allow_relative=True, flag="--fail-on")
        gates.check(fail_on)
        if getattr(args, "slo", None):
            parse_slo(args.slo)
    assert {"shadow", "replay", "compare", "analyze"} <= seen
