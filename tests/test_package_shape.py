"""The package's shape (issue 23): modules of one job each, no module over the size limit
in the optimiser and the rule engine, no stage importing the layers that compose it, and
commands that only compose."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import gpusolve

PACKAGE = Path(gpusolve.__file__).parent
MAX_LINES = 500
# Sub-packages held to the size limit (recursively).
LIMITED = ("rules", "optimize")
# The layers that compose the stages; a stage must not depend on them.
UPWARD = ("gpusolve.plan.single", "gpusolve.plan.inputs", "gpusolve.commands", "gpusolve.cli")
# What a command may not import: the stages that do the work (they are reached through one
# package function: `runs/`, `pipeline.load_inputs`, the `*_report` modules).
WORKERS = (
    "gpusolve.optimize",
    "gpusolve.candidates",
    "gpusolve.estimate.",
    "gpusolve.plan.single",
    "gpusolve.plan.inputs",
)


def _modules(sub: str) -> list[Path]:
    return sorted((PACKAGE / sub).rglob("*.py"))


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def _name(path: Path) -> str:
    return str(path.relative_to(PACKAGE))


@pytest.mark.parametrize("sub", LIMITED)
def test_every_module_is_under_the_size_limit(sub: str) -> None:
    sizes = {_name(p): len(p.read_text().splitlines()) for p in _modules(sub)}
    assert len(sizes) > 5
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


@pytest.mark.parametrize("sub", LIMITED)
def test_the_stage_does_not_import_the_layers_that_compose_it(sub: str) -> None:
    upward = {
        _name(p): sorted(m for m in _imports(p) if m.startswith(UPWARD)) for p in _modules(sub)
    }
    assert {name: found for name, found in upward.items() if found} == {}


@pytest.mark.parametrize("sub", (*LIMITED, "commands", "runs"))
def test_every_module_says_what_it_does(sub: str) -> None:
    modules = _modules(sub)
    assert modules
    missing = [_name(p) for p in modules if not ast.get_docstring(ast.parse(p.read_text()))]
    assert missing == []


def test_commands_reach_the_stages_through_one_package_function() -> None:
    direct = {
        _name(p): sorted(m for m in _imports(p) if (m + ".").startswith(WORKERS))
        for p in _modules("commands")
    }
    assert {name: found for name, found in direct.items() if found} == {}
