"""Two-stage scenario plans against the nominal plan: time and value (issue 26).

    python benchmarks/scenarios.py [--scales S,M] [--seeds 5] [--time-limit 60] [--workers 1]

Per scale and seed, the generated instance (`generator.py`) is the nominal scenario; two
more are derived from it on the IR, as the candidates stage would build them:

* growth (p = 0.3): every workload needs 1.5x the servers (rounded up) and 1.5x the rental;
* dear (p = 0.2): servers cost 1.3x, cloud 0.9x.

The generated budget caps are dropped from all three (they are sized to the nominal
instance; growth would break them and leave nothing to time).

It times `solve()` on the nominal instance (the plain plan), then the two-stage solve over
the three scenarios (`optimize.twostage.solve_two_stage`, hinted with the nominal plan
evaluated in every scenario, as `plan` does), and the whole comparison `plan` runs: the
nominal solve, its evaluation in each scenario, the two-stage solve and the hedged plan's
evaluation. Target: the two-stage solve within 3x the nominal solve at S and M. The
expected TCO of both plans is printed (the hedged one is never higher). Last, the
two-stage solve again with its time limit at the target (3x the nominal solve): how far
its plan is above the final one, and the gap it proves.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generator import generate  # noqa: E402
from gpusolve.optimize.ir import Instance, SolveConfig  # noqa: E402
from gpusolve.optimize.solve import solve  # noqa: E402
from gpusolve.optimize.twostage import solve as twostage  # noqa: E402

TARGET_RATIO = 3.0


def derived(base: Instance) -> list[twostage.Scenario]:
    # The generated budgets are sized to the nominal instance, so growth would break them
    # (infeasible, nothing to time): every scenario, the nominal one included, goes without.
    base = dataclasses.replace(base, capex_max=None, monthly_max=None)
    grown = dataclasses.replace(
        base,
        owned=tuple(dataclasses.replace(o, servers=math.ceil(1.5 * o.servers)) for o in base.owned),
        cloud=tuple(
            dataclasses.replace(c, cost_total=math.ceil(1.5 * c.cost_total)) for c in base.cloud
        ),
    )
    dear = dataclasses.replace(
        base,
        skus={
            k: dataclasses.replace(s, capex=math.ceil(1.3 * s.capex)) for k, s in base.skus.items()
        },
        cloud=tuple(
            dataclasses.replace(c, cost_total=math.ceil(0.9 * c.cost_total)) for c in base.cloud
        ),
    )
    return [
        twostage.Scenario("nominal", 0.5, base),
        twostage.Scenario("growth", 0.3, grown),
        twostage.Scenario("dear", 0.2, dear),
    ]


def expected(outcomes: dict[str, Any], scenarios: Sequence[twostage.Scenario]) -> float | None:
    total = 0.0
    for s in scenarios:
        solution = outcomes.get(s.name)
        if solution is None or solution.costs is None:
            return None
        total += s.probability * solution.costs.tco
    return total


def _above(value: int | None, reference: int | None, *, of: bool = False) -> float | None:
    """value over reference in per cent (of value instead, for a gap)."""
    if value is None or reference is None or value <= 0:
        return None
    return round(100 * (value - reference) / (value if of else reference), 2)


def bench(scale: str, seed: int, config: SolveConfig) -> dict[str, Any]:
    scenarios = derived(generate(scale, seed))
    base = scenarios[0].instance
    start = time.perf_counter()
    nominal = solve(base, config)
    nominal_s = time.perf_counter() - start
    first = twostage.FirstStage(nominal.servers)
    nominal_eval = twostage.evaluate(first, scenarios, config)
    hint = None
    if all(nominal_eval.values()):
        hint = twostage.TwoStageResult(
            "feasible", first, {k: v for k, v in nominal_eval.items() if v is not None}
        )
    t0 = time.perf_counter()
    hedged = twostage.solve_two_stage(scenarios, config, start_from=first if hint else None)
    two_stage_s = time.perf_counter() - t0
    hedged_eval = twostage.evaluate(hedged.first, scenarios, config) if hedged.first else {}
    total_s = time.perf_counter() - start
    # The same search stopped at the target's time: how good a plan a user who asks for
    # no more (`--time-limit`) gets, and what it claims.
    short = dataclasses.replace(config, time_limit_s=TARGET_RATIO * nominal_s)
    early = twostage.solve_two_stage(scenarios, short, start_from=first if hint else None)
    return {
        "scale": scale,
        "seed": seed,
        "nominal_s": round(nominal_s, 3),
        "two_stage_s": round(two_stage_s, 3),
        # When the two-stage search first held its final plan: the rest is the proof.
        "two_stage_found_s": None if hedged.found_s is None else round(hedged.found_s, 3),
        "comparison_s": round(total_s, 3),
        "ratio": round(two_stage_s / nominal_s, 2) if nominal_s else None,
        "status": hedged.status,
        "at_target_status": early.status,
        # How far the plan at the target's time is above the final one, and the gap it
        # proves (1 - bound / plan), in per cent.
        "at_target_above_pct": _above(early.objective_value, hedged.objective_value),
        "at_target_gap_pct": _above(early.objective_value, early.best_bound, of=True),
        "expected_hedged": expected(hedged_eval, scenarios),
        "expected_nominal": expected(nominal_eval, scenarios),
    }


def _median(values: Sequence[float]) -> str:
    return f"{statistics.median(values):.2f}" if values else "-"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scales", default="S,M")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    config = SolveConfig(time_limit_s=args.time_limit, workers=args.workers, seed=1)
    rows = []
    for scale in args.scales.split(","):
        for seed in range(args.seeds):
            row = bench(scale, seed, config)
            rows.append(row)
            print(json.dumps(row), flush=True)
    ok = True
    for scale in args.scales.split(","):
        mine = [r for r in rows if r["scale"] == scale]
        nominal = statistics.median(r["nominal_s"] for r in mine)
        staged = statistics.median(r["two_stage_s"] for r in mine)
        whole = statistics.median(r["comparison_s"] for r in mine)
        ratio = statistics.median(r["ratio"] for r in mine if r["ratio"] is not None)
        passed = ratio <= TARGET_RATIO
        above = [r["at_target_above_pct"] for r in mine if r["at_target_above_pct"] is not None]
        gaps = [r["at_target_gap_pct"] for r in mine if r["at_target_gap_pct"] is not None]
        ok &= passed
        print(
            f"{scale}: median nominal {nominal:.2f} s, two-stage {staged:.2f} s "
            f"(ratio {ratio:.2f}, target <= {TARGET_RATIO:g}: {'PASS' if passed else 'FAIL'}), "
            f"whole comparison {whole:.2f} s; stopped at {TARGET_RATIO:g}x the nominal time: "
            f"plans {len(above)}/{len(mine)}, median {_median(above)} % above the final plan, "
            f"proven gap median {_median(gaps)} %"
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
