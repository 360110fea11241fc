"""Test helpers that are not input builders: where the shipped data lives (`shipped`), the
brute-force optimiser reference (`optimize_reference`) and the seeded cases the optimiser
tests share (`differential`), the physics validation cases (`validation_cases`, also read
by benchmarks/validation.py) and the fuzzing harness (`fuzz`).

Imported only as `tests.support.<module>` (pyproject.toml: pytest's importlib mode with the
repository root on the path); tests/test_suite_imports.py checks it.
"""
