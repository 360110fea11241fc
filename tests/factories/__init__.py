"""Typed builders of test inputs, each valid as it stands and overridable by keyword:
`catalog` (cards, servers, colo and cloud offers as models), `hardware` (datasheet cards and
the boards the physics sizes), `requirements` (workloads, requirements, layouts),
`instances` (optimiser instances and solve settings), `files` (catalogue entries, catalogue,
requirements and rule files on disk) and `policy` (a candidates policy without rules).

Imported only as `tests.factories.<module>` (pyproject.toml: pytest's importlib mode with
the repository root on the path); tests/test_suite_imports.py checks it.
"""
