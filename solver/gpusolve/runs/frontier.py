"""`gpusolve frontier` from its files to what it shows: load, sweep the deadline factors,
render the table, report or chart, and the exit code of the sweep's status."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpusolve.models.frontier import Frontier
from gpusolve.runs.output import BadOption, CommandOutput, OutputFile, RunResult, written

if TYPE_CHECKING:
    from gpusolve.models.catalog import Catalog

Progress = Callable[[str], None]

EXIT_CODES = {"infeasible": 1, "timeout": 3}  # any other status has a point: 0


@dataclass(frozen=True)
class FrontierRequest:
    """The parsed command line of `frontier` (--low < --high and --plot already checked)."""

    requirements: Path
    catalog_paths: tuple[Path, ...]
    rules_paths: tuple[Path, ...]
    fmt: str = "text"
    output: Path | None = None
    points: int = 12
    low: float | None = None  # stop the faster sweep at this factor of the deadlines
    high: float = 4.0
    gain: float = 0.1
    time_limit_s: float = 300.0  # wall clock for the whole command
    plot: Path | None = None
    from_zero: bool = True  # the charts' axes start at zero (not --axis-from-data)
    cluster: str | None = None  # --cluster: a Ray address for the looser points


def run_frontier(
    request: FrontierRequest, progress: Progress = lambda _: None
) -> RunResult[Frontier]:
    """Everything `frontier` does between parsing and printing. Raises InputError (bad
    files) and BadOption (no workload has a deadline to trade). `--time-limit` bounds the
    whole of it: every search ends by the deadline it sets, and a point not reached by
    then is not searched (said in the output)."""
    import time

    from gpusolve.optimize import interrupt

    interrupt.stop_at(time.monotonic() + request.time_limit_s)
    try:
        return _run_frontier(request, progress)
    finally:
        interrupt.stop_at(None)


def _run_frontier(request: FrontierRequest, progress: Progress) -> RunResult[Frontier]:
    from gpusolve.analyses.cluster import Files, cluster_of
    from gpusolve.analyses.frontier import Sweep, sweep
    from gpusolve.analyses.pool import default_workers
    from gpusolve.candidates.market import exclusions
    from gpusolve.optimize.ir import SolveConfig
    from gpusolve.plan.inputs import prepare_run
    from gpusolve.render.frontier import frontier_text

    run = prepare_run(
        request.requirements, request.catalog_paths, request.rules_paths, progress=progress
    )
    if not any(w.deadline_hours for w in run.reqs.workloads):
        raise BadOption("REQS.yaml", "no workload has a deadline_hours to trade against cost")
    blocked = exclusions(run.catalog, run.market) if run.market is not None else []
    note = (
        f"market {run.market.market}: {len(blocked)} server(s) not bought (export status; "
        "allow_restricted: lifts it where you own stock or have a compliant channel)"
        if blocked and run.market is not None
        else None
    )
    how = Sweep(
        high=request.high, max_points=request.points, gain=request.gain, floor_factor=request.low
    )
    result = sweep(
        run.reqs,
        run.catalog,
        run.policies,
        SolveConfig(time_limit_s=request.time_limit_s, workers=1),
        how,
        progress,
        note,
        workers=default_workers(),
        cluster=cluster_of(
            request.cluster,
            Files(request.requirements, request.catalog_paths, request.rules_paths),
        ),
    )
    code = EXIT_CODES.get(result.status, 0)
    if not result.points:  # nothing to write or draw: say why on the terminal
        text = _json(result) if request.fmt == "json" else frontier_text(result, request.from_zero)
        return RunResult(result, CommandOutput(stdout=text, exit_code=code))
    text = _rendered(result, request, run.catalog)
    files: list[OutputFile] = []
    stdout = text
    if request.output is not None:
        files.append(written(request.output, text))
        stdout = ""
    if request.plot is not None:
        from gpusolve.report.charts import write_frontier_plot

        chart = write_frontier_plot(result, request.plot, request.from_zero)
        files.append(written(request.plot, chart))
    return RunResult(result, CommandOutput(stdout=stdout, files=tuple(files), exit_code=code))


def _rendered(result: Frontier, request: FrontierRequest, catalog: Catalog) -> str:
    from gpusolve.render.frontier import frontier_text

    if request.fmt == "json":
        return _json(result)
    if request.fmt == "html":
        from gpusolve.report.html import context_for, frontier_html

        ctx = context_for(catalog, list(request.catalog_paths), [request.requirements])
        return frontier_html(result, request.from_zero, ctx)
    return frontier_text(result, request.from_zero)


def _json(result: Frontier) -> str:
    import json

    return json.dumps(result.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
