"""`plan --sensitivity` speed: the whole analysis of each shipped example on a pool of
`--workers` processes (issue 26 target: every price of an example within 10 s on 2 cores).

Run: python benchmarks/sensitivity.py [--workers 2] [--repeat 3] [EXAMPLE.yaml ...]

Per example and mode, the median wall clock of `sensitivity.analyse` (the reference
re-solve, then every parameter's stepping and bisection over the pool; for a plan hedged
over a `scenarios:` block, `sensitivity.analyse_hedged`), after the inputs are loaded
and the plan's own solve (`make_plan`) has warmed the process up, as the command runs it.
"prices" times every price of the plan; "+ efficiency" adds each card's efficiency, whose
probes generate the candidates again (seconds each on the larger examples). Exit status 1
when an example's prices miss the target.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from gpusolve.analyses.sensitivity import (
    PROBE_TIME_S,
    analyse,
    analyse_hedged,
    plan_purchase,
)
from gpusolve.candidates.scaling import CandidateInputs
from gpusolve.optimize.ir import SolveConfig
from gpusolve.plan import make_plan
from gpusolve.plan.inputs import prepare_run
from gpusolve.plan.solved import Hedged, PlanOptions, Single

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 10.0


def measure(path: Path, workers: int, repeat: int, efficiency: bool) -> tuple[float, int, int]:
    """Median wall seconds, re-solves and parameters of one example's analysis."""
    run = prepare_run(path, [], [])
    config = SolveConfig(time_limit_s=PROBE_TIME_S, workers=1)
    solved = make_plan(run, PlanOptions(config=config))
    inputs = CandidateInputs(run.reqs, run.catalog, run.policies)
    walls: list[float] = []
    solves = params = 0
    for _ in range(repeat):
        started = time.perf_counter()
        if isinstance(solved.solution, Hedged):
            purchase = plan_purchase(solved.plan)
            result = analyse_hedged(
                solved.solution, inputs, config, workers, purchase, efficiency=efficiency
            )
        else:
            assert isinstance(solved.solution, Single), "no plan"
            instance = solved.solution.instance
            result = analyse(instance, inputs, config, workers, efficiency=efficiency)
        walls.append(time.perf_counter() - started)
        solves, params = result.solves, len(result.ranges)
    return statistics.median(walls), solves, params


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("examples", nargs="*", type=Path)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-efficiency", action="store_true", help="prices only")
    args = parser.parse_args(argv)
    examples = args.examples or sorted((ROOT / "examples").glob("*.yaml"))
    modes = [False] if args.no_efficiency else [False, True]
    print(f"{'example':34} {'mode':14} {'params':>6} {'solves':>6} {'wall s':>7}  target")
    failed = False
    for path in examples:
        for efficiency in modes:
            wall, solves, params = measure(path, args.workers, args.repeat, efficiency)
            mode = "+ efficiency" if efficiency else "prices"
            verdict = ""
            if not efficiency:
                ok = wall <= TARGET_S
                failed |= not ok
                verdict = f"{'PASS' if ok else 'FAIL'} (<= {TARGET_S:g} s)"
            print(f"{path.name:34} {mode:14} {params:6d} {solves:6d} {wall:7.2f}  {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
