"""The frontier as a table and a small text chart (time across, cost up)."""

from __future__ import annotations

from gpusolve.models.frontier import Frontier

CHART_WIDTH = 50
CHART_HEIGHT = 10


def frontier_text(f: Frontier, from_zero: bool = True) -> str:
    cur = f.currency
    lines = [f"Cost <-> time frontier ({len(f.points)} non-dominated plans), fastest first", ""]
    lines.append(
        f"  {'asked':<16}  {'longest run':>12}  {'TCO ' + cur:>14}  {'capex ' + cur:>14}  "
        f"{'per hour saved':>14}  what it buys or rents"
    )
    for p, per_hour in zip(f.points, cost_per_hour_saved(f), strict=True):
        star = "" if p.proven_optimal else " *"
        saved = "-" if per_hour is None else f"{per_hour:,.0f}"
        lines.append(
            f"  {p.asked():<16}  {p.makespan_h:>10,.1f} h  {p.tco:>14,.0f}  {p.capex:>14,.0f}  "
            f"{saved:>14}  " + "; ".join(p.hardware) + star
        )
    if any(not p.proven_optimal for p in f.points):
        lines += ["", "  * best found within --time-limit, optimality not proven"]
    if f.infeasible_factors:
        tight = ", ".join(f"{x:g}" for x in f.infeasible_factors)
        lines += ["", f"  no plan at deadline factors: {tight}"]
    if f.timed_out_factors:
        slow = ", ".join(f"{x:g}" for x in f.timed_out_factors)
        lines += [
            "",
            f"  no plan found within the time limit at deadline factors: {slow} "
            "(not proven impossible; try a longer --time-limit)",
        ]
    if f.stop_reason:
        lines += ["", "Why nothing faster:"]
        lines += [f"  - {line}" for line in f.stop_reason]
    if len(f.points) >= 2:
        lines += ["", *chart(f, from_zero)]
    return "\n".join(lines) + "\n"


def chart(f: Frontier, from_zero: bool = True) -> list[str]:
    """Time across, cost up. Both axes start at zero unless `from_zero` is False: a chart
    whose cost axis starts at the cheapest point draws a 2% difference as the full height."""
    times = [p.makespan_h for p in f.points]
    costs = [p.tco for p in f.points]
    t1, c1 = max(times), max(costs)
    t0 = min(0.0, *times) if from_zero else min(times)
    c0 = min(0.0, *costs) if from_zero else min(costs)
    grid = [[" "] * CHART_WIDTH for _ in range(CHART_HEIGHT)]
    for t, c in zip(times, costs, strict=True):
        x = round((t - t0) / (t1 - t0 or 1) * (CHART_WIDTH - 1))
        y = round((c - c0) / (c1 - c0 or 1) * (CHART_HEIGHT - 1))
        grid[CHART_HEIGHT - 1 - y][x] = "*"
    out = [f"  TCO ({f.currency}) up to {c1:,.0f}"]
    out += ["  |" + "".join(row) for row in grid]
    out.append("  +" + "-" * CHART_WIDTH)
    left, right = f"{t0:,.0f} h", f"{t1:,.0f} h"
    out.append(f"   {left}{'longest run':^{CHART_WIDTH - len(left) - len(right)}}{right}")
    out.append(f"  (bottom row: TCO {c0:,.0f})")
    return out


def cost_per_hour_saved(f: Frontier) -> list[float | None]:
    """Per point (in the frontier's order): what each hour off the longest run costs
    against the next slower point, (its TCO - the slower one's) / (the slower one's
    longest run - its own); None for the slowest point, which has nothing slower."""
    out: list[float | None] = []
    for p in f.points:
        slower = [q for q in f.points if q.makespan_h > p.makespan_h]
        if not slower:
            out.append(None)
            continue
        q = min(slower, key=lambda q: q.makespan_h)
        out.append((p.tco - q.tco) / (q.makespan_h - p.makespan_h))
    return out
