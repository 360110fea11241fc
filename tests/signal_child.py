"""Child process for tests/test_signals.py: solve a large generated instance under
`run_interruptibly`, announce when the search starts, print the outcome as JSON."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.generator import generate

from gpusolve.optimize.interrupt import requested, run_interruptibly
from gpusolve.optimize.ir import SolveConfig
from gpusolve.optimize.solve import solve


def main() -> None:
    instance = generate(sys.argv[1], int(sys.argv[2]))
    config = SolveConfig(time_limit_s=float(sys.argv[3]), workers=1, seed=1)
    began = time.perf_counter()
    solution = run_interruptibly(
        lambda: solve(instance, config),
        on_search=lambda: print("searching", file=sys.stderr, flush=True),
    )
    print(
        json.dumps(
            {
                "status": solution.status,
                "interrupted": requested(),
                "plans": len(solution.choices),
                "seconds": time.perf_counter() - began,
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
