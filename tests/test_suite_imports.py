"""The suite's import discipline (pyproject.toml, [tool.pytest.ini_options]): no test module
imports another test module, and the helper packages load under one name only."""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).resolve().parent
HELPERS = ("support", "factories")
# Where the helpers that test files used to import by a bare name went.
MOVED = {
    "plan_support": "tests.support.shipped (paths, shipped, example, owned_only) and "
    "tests.factories.files (write_catalog, write_reqs)",
    "rules_support": "tests.factories.catalog (card, server, colo_offer, cloud_offer), "
    "tests.factories.requirements (workload, requirements, layout) and "
    "tests.factories.files (write_file)",
    "optimize_reference": "tests.support.optimize_reference",
    "validation_cases": "tests.support.validation_cases",
    "fuzz_support": "tests.support.fuzz",
}


def _imported(tree: ast.AST) -> Iterator[tuple[int, list[str]]]:
    """(line, names) of every import statement: `from x import y` names `x` and `x.y`,
    since y may be a module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, [alias.name]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            sep = "." if node.module else ""
            yield node.lineno, [base] + [f"{base}{sep}{alias.name}" for alias in node.names]


def _is_test_module(name: str) -> bool:
    return any(part == "conftest" or part.startswith("test_") for part in name.split("."))


def _problem(name: str) -> str | None:
    if name.startswith("."):
        return f"relative import {name}; write tests.support/tests.factories"
    if _is_test_module(name):
        return f"imports the test module {name}"
    parts = name.split(".")
    for old, new in MOVED.items():
        if old in (parts[0], parts[1] if parts[0] == "tests" and len(parts) > 1 else None):
            return f"imports {name}; it moved to {new}"
    if name.split(".")[0] in HELPERS:
        return f"imports {name}; write tests.{name}"
    return None


def violations(source: str) -> list[str]:
    """What is wrong with one file's imports: a test module imported (as a library, its
    tests would run twice), a helper imported by a second name, a relative import. One
    problem per statement."""
    found = []
    for line, names in _imported(ast.parse(source)):
        problems = [p for p in map(_problem, names) if p is not None]
        if problems:
            found.append(f"{line}: {problems[0]}")
    return found


def _python_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "corpus" not in p.relative_to(TESTS).parts)


def test_no_test_module_imports_another_and_helpers_have_one_name() -> None:
    problems = [
        f"{path.relative_to(TESTS.parent)}:{problem}"
        for path in _python_files()
        for problem in violations(path.read_text(encoding="utf-8"))
    ]
    assert problems == []


def test_the_check_catches_each_kind_of_bad_import() -> None:
    assert violations("from tests.test_optimize_cases import instance\n") == [
        "1: imports the test module tests.test_optimize_cases"
    ]
    assert violations("import test_estimate_cards\n") == [
        "1: imports the test module test_estimate_cards"
    ]
    assert violations("from tests import test_cli\n")[0].endswith("tests.test_cli")
    assert violations("from support.shipped import ROOT\n") != []
    assert violations("from factories import catalog\n") != []
    assert violations("from .factories import catalog\n") != []
    assert violations("from conftest import CliResult\n") != []
    assert "tests.support.shipped" in violations("from plan_support import ROOT\n")[0]
    assert "moved to" in violations("from tests.optimize_reference import optimum\n")[0]
    fine = "from tests.factories.catalog import card\nfrom tests.support import shipped\n"
    assert violations(fine) == []


def test_no_file_of_the_suite_is_loaded_under_two_names() -> None:
    """What the import mode guarantees, checked on what this process has loaded so far: a
    helper loaded twice would keep two caches (`differential.case` enumerates each seed
    once per name)."""
    import tests.support.differential  # noqa: F401 (a helper is loaded at least once)

    names: dict[Path, list[str]] = defaultdict(list)
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None)
        if file and Path(file).resolve().is_relative_to(TESTS):
            names[Path(file).resolve()].append(name)
    assert names
    assert {f: n for f, n in names.items() if len(n) > 1} == {}
    helpers = [n for f, ns in names.items() for n in ns if f.parent.name in HELPERS]
    assert helpers and all(n.startswith("tests.") for n in helpers)


def test_the_helper_packages_are_packages_and_the_old_helpers_are_gone() -> None:
    for package in HELPERS:
        assert (TESTS / package / "__init__.py").is_file()
    for old in ("plan_support", "rules_support", "optimize_reference", "validation_cases"):
        assert not (TESTS / f"{old}.py").exists()
    assert not (TESTS / "fuzz" / "fuzz_support.py").exists()
