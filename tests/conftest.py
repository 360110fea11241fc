from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from gpusolve.cli import main
from gpusolve.optimize import interrupt
from gpusolve.optimize.tuning import Tuning


def pytest_configure(config: pytest.Config) -> None:
    """A private cache directory for the whole run: the suite parses thousands of generated
    CEL expressions, which must not land in the developer's own cache (`rules/cache.py`)."""
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="gpusolve-tests-")
    # No config file or environment default of the developer's reaches the suite
    # (`commands/settings.py`); the tests of those set their own.
    os.environ["GPUSOLVE_CONFIG"] = ""
    for name in ("GPUSOLVE_CATALOG", "GPUSOLVE_RULES", "GPUSOLVE_MARKET"):
        os.environ.pop(name, None)


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = os.environ["XDG_CACHE_HOME"]
    # Tree caches save at exit, after this hook; under a path that cannot be a directory
    # they find no cache dir and write nothing (`cache.parser_cache_file`).
    os.environ["XDG_CACHE_HOME"] = os.devnull
    shutil.rmtree(folder, ignore_errors=True)


@dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture(autouse=True)
def _no_stop_request_left_over() -> object:
    """A test that simulates Ctrl-C leaves the process-wide stop request set; a later test
    in the same worker that calls `solve` directly would see its search stopped at once
    (CI: 'unknown' instead of 'optimal' in test_optimize_monotone)."""
    yield
    interrupt.reset()


@pytest.fixture
def gpusolve(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run the real console entry point in-process: exit code, stdout, stderr."""

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture
def parallel_always() -> Tuning:
    """Two workers even on the tiny models of the optimiser tests that ask for it (the solve
    gives models below `Tuning.parallel_min_choices` one). A fixture here, not in a test
    module, so that two test modules can share it without importing each other."""
    return Tuning(parallel_min_choices=0)
