from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from gpusolve.cli import main


@dataclass
class CliResult:
    code: int
    out: str
    err: str


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
