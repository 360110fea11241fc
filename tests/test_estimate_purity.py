"""The estimate package is pure physics: no I/O, no solver, no prices (DESIGN.md)."""

from __future__ import annotations

import ast
from pathlib import Path

import gpusolve.estimate

PACKAGE = Path(gpusolve.estimate.__file__).parent
ALLOWED_IMPORTS = (
    "__future__",
    "collections.abc",
    "dataclasses",
    "functools",
    "math",
    "re",
    "typing",
    "gpusolve.",
)
FORBIDDEN_CALLS = {"open", "print", "input", "eval", "exec"}


def test_estimate_imports_nothing_that_does_io_or_solves() -> None:
    for path in sorted(PACKAGE.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.startswith(ALLOWED_IMPORTS), f"{path.name} imports {name}"
                assert not name.startswith(("gpusolve.load", "gpusolve.optimize")), name
        calls = {
            n.func.id
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        }
        assert not calls & FORBIDDEN_CALLS, f"{path.name} calls {calls & FORBIDDEN_CALLS}"
        text = path.read_text(encoding="utf-8").lower().replace("price-free", "")
        assert "price" not in text, path.name
