"""`gpusolve frontier`: the cost <-> time-to-train trade-off, as a table and a chart."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from gpusolve.commands.options import (
    FiniteFloatRange,
    catalog_option,
    format_option,
    progress_printer,
    rules_option,
)


@click.command("frontier")
@click.argument("requirements", metavar="REQS.yaml", type=click.Path(path_type=Path))
@catalog_option
@rules_option
@format_option("text", "json")
@click.option(
    "--points",
    type=click.IntRange(2, 40),
    default=9,
    show_default=True,
    help="How many deadline factors to try.",
)
@click.option(
    "--low",
    type=FiniteFloatRange(min=0.01, max=1000),
    default=0.25,
    show_default=True,
    help="Tightest factor applied to every training deadline.",
)
@click.option(
    "--high",
    type=FiniteFloatRange(min=0.01, max=1000),
    default=4.0,
    show_default=True,
    help="Loosest factor applied to every training deadline.",
)
@click.option(
    "--time-limit",
    type=FiniteFloatRange(min=0.1),
    default=30.0,
    show_default=True,
    help="Seconds per solve.",
)
@click.option("-q", "--quiet", is_flag=True, help="No progress messages on stderr.")
def frontier(
    requirements: Path,
    catalog_paths: tuple[Path, ...],
    rules_paths: tuple[Path, ...],
    fmt: str,
    points: int,
    low: float,
    high: float,
    time_limit: float,
    quiet: bool,
) -> None:
    """How much finishing sooner costs: the cost <-> time frontier for REQS.yaml.

    \b
    Every training deadline is scaled by factors from --low to --high (1 = as written);
    at each, the cheapest plan is found; the points that no other point beats on both
    total cost and the longest time to train are printed, fastest first, with the
    hardware each buys or rents. Workloads need a deadline_hours to take part.

    \b
    Example:
      gpusolve frontier examples/pretrain-70b-infiniband.yaml --points 7

    \b
    Exit codes: 0 at least one point has a plan (status "optimal" when every point is
    proven, else "feasible"); 1 no deadline factor admits a plan (proven, status
    "infeasible"); 2 invalid input; 3 no plan found within --time-limit at any factor
    and some were not proven impossible (status "timeout").
    """
    from gpusolve.frontier import factors, sweep
    from gpusolve.optimize.ir import SolveConfig
    from gpusolve.pipeline import prepare_run
    from gpusolve.render.frontier import frontier_text

    if low >= high:
        raise click.BadParameter("--low must be below --high", param_hint="--low")

    progress = progress_printer(quiet)

    run = prepare_run(requirements, catalog_paths, rules_paths, progress=progress)
    if not any(w.deadline_hours for w in run.reqs.workloads):
        raise click.BadParameter(
            "no workload has a deadline_hours to trade against cost", param_hint="REQS.yaml"
        )
    result = sweep(
        run.reqs,
        run.catalog,
        run.policies,
        factors(points, low, high),
        SolveConfig(time_limit_s=time_limit, workers=1),
        progress,
    )
    if fmt == "json":
        click.echo(json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False))
    else:
        click.echo(frontier_text(result), nl=False)
    code = {"infeasible": 1, "timeout": 3}.get(result.status, 0)
    if code:
        sys.exit(code)
