"""`gpusolve` run in this process: its exit code and what it printed on stdout."""

from __future__ import annotations

import contextlib
import io

from gpusolve.cli import main


def run_cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return code, out.getvalue()
