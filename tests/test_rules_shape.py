"""The rule engine's shape (issue 23): modules of one job each, and no import upwards."""

from __future__ import annotations

import ast
from pathlib import Path

import gpusolve.rules

RULES_DIR = Path(gpusolve.rules.__file__).parent
MAX_LINES = 500
# The layers that compose the rules stage; the stage must not depend on them.
UPWARD = ("gpusolve.planner", "gpusolve.pipeline", "gpusolve.commands", "gpusolve.cli")


def _modules() -> list[Path]:
    return sorted(RULES_DIR.glob("*.py"))


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_every_rules_module_is_under_the_size_limit() -> None:
    sizes = {p.name: len(p.read_text().splitlines()) for p in _modules()}
    assert len(sizes) > 5
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def test_the_rules_stage_does_not_import_the_layers_that_compose_it() -> None:
    upward = {p.name: sorted(m for m in _imports(p) if m.startswith(UPWARD)) for p in _modules()}
    assert {name: found for name, found in upward.items() if found} == {}


def test_every_rules_module_says_what_it_does() -> None:
    missing = [p.name for p in _modules() if not ast.get_docstring(ast.parse(p.read_text()))]
    assert missing == []
