"""`gpusolve frontier`: the cost <-> time-to-train trade-off, as a table and a chart."""

from __future__ import annotations

from pathlib import Path

import click

from gpusolve.commands.options import (
    FiniteFloatRange,
    OutputPath,
    catalog_option,
    check_output,
    default_option,
    format_option,
    output_option,
    progress_printer,
    quiet_option,
    require_output_for_html,
    rules_option,
    time_limit_option,
)


@click.command("frontier")
@click.argument("requirements", metavar="REQS.yaml", type=click.Path(path_type=Path))
@catalog_option
@rules_option
@format_option("text", "json", "html")
@output_option
@default_option(
    "--points",
    click.IntRange(2, 40),
    12,
    "Most plans to solve: the plan itself, the looser ones, then faster ones.",
)
@click.option(
    "--low",
    type=FiniteFloatRange(min=0.01, max=1000),
    default=None,
    help="Stop the faster plans at this factor of the deadlines (default: go down to the "
    "fastest plan the catalogue allows).",
)
@default_option(
    "--high",
    FiniteFloatRange(min=1, max=1000),
    4.0,
    "Loosest factor applied to every training deadline (two looser points, up to this).",
)
@default_option(
    "--gain",
    FiniteFloatRange(min=0.01, max=0.9),
    0.1,
    "Each faster plan runs at least this share faster than the last.",
)
@time_limit_option(
    300.0,
    "Seconds for the whole command: the candidates and every plan; the points not reached by "
    "then are not searched, and the output says so (exit 0 with the points found).",
)
@click.option(
    "--plot",
    metavar="FILE.svg|png",
    type=OutputPath(),
    default=None,
    help="Also draw the frontier to this SVG or PNG file.",
)
@click.option(
    "--axis-from-data",
    is_flag=True,
    help="Start the chart's axes at the smallest time and cost instead of zero "
    "(zooms in; small differences then look large).",
)
@click.option(
    "--cluster",
    metavar="ADDRESS",
    default=None,
    help="The Ray cluster to solve the looser points on ('local' starts one; default "
    "RAY_ADDRESS, else the local process pool; needs the optional extra: pip install "
    "'gpusolve[ray]').",
)
@quiet_option
def frontier(
    requirements: Path,
    catalog_paths: tuple[Path, ...],
    rules_paths: tuple[Path, ...],
    fmt: str,
    output: Path | None,
    points: int,
    low: float | None,
    high: float,
    gain: float,
    time_limit: float,
    plot: Path | None,
    axis_from_data: bool,
    cluster: str | None,
    quiet: bool,
) -> None:
    """How much finishing sooner costs: the cost <-> time frontier for REQS.yaml.

    \b
    First the plan at the deadlines as written, then looser deadlines (up to --high
    times), then faster plans: every training run capped a --gain share below the last
    point's longest run, the cheapest plan under that cap each time (more servers, more
    instances for fewer hours, other cards), down to the fastest the catalogue allows.
    The points that no other point beats on both total cost and the longest time to
    train are printed, fastest first, with what each buys or rents, and why nothing
    faster exists (an offer's instance limit, the sites' racks, the global batch, the
    layout search, a budget, the time limit or --points). A workload needs a
    deadline_hours to take part.

    \b
    Examples:
      gpusolve frontier examples/finetune-7b-deadline.yaml
      gpusolve frontier examples/pretrain-70b-infiniband.yaml --points 7
      gpusolve frontier examples/pretrain-70b-infiniband.yaml --plot frontier.svg
      gpusolve frontier examples/pretrain-70b-infiniband.yaml --format html -o frontier.html

    \b
    Charts (text, --plot, html) start both axes at zero, so a small difference in cost
    looks small; --axis-from-data zooms in on the points.

    \b
    Exit codes: 0 at least one point has a plan (status "optimal" when every point is
    proven, else "feasible"); 1 no deadline factor admits a plan (proven, status
    "infeasible"); 2 invalid input; 3 no plan found within --time-limit at any factor
    and some were not proven impossible (status "timeout").
    """
    from gpusolve.commands.deliver import invoke
    from gpusolve.runs.frontier import FrontierRequest, run_frontier

    if low is not None and low >= 1:
        raise click.BadParameter(
            "--low stops the faster plans: it must be below 1 (the deadlines as written)",
            param_hint="--low",
        )
    require_output_for_html(fmt, output)
    if plot is not None:
        _check_plot(plot)
    check_output(output, [requirements, *catalog_paths, *rules_paths])
    check_output(plot, [requirements, *catalog_paths, *rules_paths])
    request = FrontierRequest(
        requirements,
        catalog_paths,
        rules_paths,
        fmt=fmt,
        output=output,
        points=points,
        low=low,
        high=high,
        gain=gain,
        time_limit_s=time_limit,
        plot=plot,
        from_zero=not axis_from_data,
        cluster=cluster,
    )
    progress = progress_printer(quiet)
    invoke(lambda: run_frontier(request, progress), progress)


def _check_plot(plot: Path) -> None:
    """--plot names an SVG or PNG file and matplotlib imports, before any work."""
    from gpusolve.report.charts import INSTALL_HINT, PLOT_SUFFIXES, available

    if plot.suffix.lower() not in PLOT_SUFFIXES:
        raise click.BadParameter(
            f"{plot}: the file must end in .svg or .png (the format is read from it)",
            param_hint="--plot",
        )
    if not available():
        raise click.UsageError(f"--plot draws with matplotlib: {INSTALL_HINT}")
