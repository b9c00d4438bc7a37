"""anonymize/ has no import cycle: statically (every import of one of its modules, at module
level, inside a function or under `if TYPE_CHECKING:`, so no module needs another's type
through a cycle either) and at run time
(each module imported first, on its own, in a fresh interpreter)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "anonymize"
MODULES = sorted(p.stem for p in PKG.glob("*.py") if p.stem != "__init__")


def _imports(path: Path) -> set[str]:
    """The anonymize modules `path` imports (relative or through shadowreplay.anonymize)."""
    out: set[str] = set()
    stack: list[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"))]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level == 1 or base.startswith("shadowreplay.anonymize"):
                base = base.removeprefix("shadowreplay.anonymize").lstrip(".")
                if base:
                    out.add(base.split(".")[0])
                else:  # from . import x, y
                    out.update(a.name for a in node.names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("shadowreplay.anonymize."):
                    out.add(a.name.split(".")[2])
        stack.extend(ast.iter_child_nodes(node))
    return {m for m in out if m in MODULES}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state and (found := visit(n)):
                return found
        state[m] = 2
        path.pop()
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_the_static_import_graph_has_no_cycle():
    graph = {m: _imports(PKG / f"{m}.py") for m in MODULES}
    assert graph["scrubber"] >= {"bodywalk", "detectors"}  # (the graph is read at all)
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_the_cycle_finder_finds_one():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_each_module_imports_first_and_alone():
    code = (
        "import importlib, sys\n"
        f"for m in {MODULES!r}:\n"
        "    for k in [k for k in sys.modules if k.startswith('shadowreplay.anonymize')]:\n"
        "        del sys.modules[k]\n"
        "    importlib.import_module('shadowreplay.anonymize.' + m)\n"
        "print('ok', len(" + repr(MODULES) + "))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("ok")
