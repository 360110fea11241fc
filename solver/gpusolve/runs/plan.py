"""`gpusolve plan` from its files to what it shows: load, solve (Ctrl-C keeps the best
plan so far), the analyses on the finished plan (top-k, why-not, then sensitivity ranges),
render, and the exit code of the outcome. A plan and a purchase schedule (`periods:`) take
the same path: `make_plan` returns either as a `Solved`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpusolve.models.plan import Plan
from gpusolve.models.schedule import Schedule
from gpusolve.runs.output import CommandOutput, OptionConflict, RunResult, written

if TYPE_CHECKING:
    from gpusolve.analyses.cluster import Cluster
    from gpusolve.optimize.ir import ScheduleSolver
    from gpusolve.plan.inputs import Inputs
    from gpusolve.plan.solved import PlanOptions, Solved

Progress = Callable[[str], None]
Outcome = Plan | Schedule

# Status -> exit code, for a plan and a schedule alike: a proven "no" (1) and "no answer
# in time" (3) must differ, so a script can retry the second with more time and not the
# first.
EXIT_CODES = {"optimal": 0, "feasible": 0, "infeasible": 1, "timeout": 3, "unknown": 3}
INTERRUPTED_EXIT = 130  # 128 + SIGINT, as a shell reports a Ctrl-C
# The work limit when none is given: CP-SAT's deterministic time per solve.
DEFAULT_WORK_LIMIT = 120.0
# The wall clock of a single plan's search when no --time-limit is given (its staged
# search shares its time by the clock); a schedule has none unless one is given.
DEFAULT_WALL_S = 60.0
# The formats that carry the memo: its "what would change the decision" needs ranges, so
# a bounded sensitivity (the plan's own prices and cards) runs for them by default.
MEMO_FORMATS = ("html", "markdown")


@dataclass(frozen=True)
class PlanRequest:
    """The parsed command line of `plan` (option combinations already checked)."""

    requirements: Path
    catalog_paths: tuple[Path, ...]
    rules_paths: tuple[Path, ...]
    fmt: str = "text"
    output: Path | None = None
    objective: str | None = None
    capex_max: float | None = None
    monthly_max: float | None = None
    top_k: int = 0
    why_not: str | None = None
    time_limit_s: float | None = None  # wall clock; None: the work limit alone bounds it
    work_limit: float | None = None  # None: DEFAULT_WORK_LIMIT
    workers: int = 1
    schedule_solver: ScheduleSolver = "race"
    seed: int = 1
    robust: str | None = None
    timings: bool = False
    sensitivity: bool = False
    memo_ranges: bool = True  # html and markdown: a bounded sensitivity for the memo
    bom: bool = False
    cash: bool = False  # --cash --format csv: the cash view by month
    risk: int = 0  # --risk N: draws (0: none)
    replan: bool = False
    cluster: str | None = None  # --cluster: a Ray address
    launch: Path | None = None  # a folder for the deployments' launch files
    bar: bool = True  # progress bars on a terminal (off with -q)


def run_plan(request: PlanRequest, progress: Progress = lambda _: None) -> RunResult[Outcome]:
    """Everything `plan` does between parsing and printing. Raises InputError (bad files,
    an unknown --why-not id) and OptionConflict (options these requirements refuse).
    `--time-limit` bounds the whole of it: every search ends by the deadline it sets."""
    import time

    from gpusolve.optimize import interrupt

    wall = request.time_limit_s
    interrupt.stop_at(None if wall is None else time.monotonic() + wall)
    try:
        return _run_plan(request, progress)
    finally:
        interrupt.stop_at(None)


def _run_plan(request: PlanRequest, progress: Progress) -> RunResult[Outcome]:
    from gpusolve.optimize.interrupt import requested
    from gpusolve.plan.inputs import prepare_run

    run = prepare_run(
        request.requirements,
        request.catalog_paths,
        request.rules_paths,
        objective=request.objective,
        capex_max=request.capex_max,
        monthly_max=request.monthly_max,
        progress=progress,
    )
    if request.why_not is not None:
        run.check_known_id(request.why_not)
    check_options(run, request)
    options = plan_options(request, run.reqs.phased)
    _planner_imported(run)
    solved = solve_interruptibly(run, options, progress, request.bar)
    plan = solved.plan
    if requested():
        return interrupted(plan, request)
    finished = is_finished(plan)
    memo = request.memo_ranges and request.fmt in MEMO_FORMATS and not request.sensitivity
    memo = memo and isinstance(plan, Plan)  # a schedule has no memo
    if (request.sensitivity or memo) and finished and not request.bom:  # ranges need a plan
        try:
            plan = _with_ranges(solved, request.bar, progress, memo, _cluster(request))
        except KeyboardInterrupt:  # the plan itself is finished: print it, without ranges
            return RunResult(plan, _sensitivity_interrupted(plan, request.fmt))
    if isinstance(plan, Schedule) and finished:  # after the ranges: they copy solved.plan
        plan = _with_cash(plan, run)
    if request.risk and finished and not request.bom:
        plan = _with_risk(solved.with_plan(plan), request, progress)
    text = plan_output(plan, request, run)
    shown = _shown(text, finished, request.output, EXIT_CODES.get(plan.status, 0))
    if request.launch is not None:
        shown = _with_launch_files(shown, plan, run, request.launch)
    return RunResult(plan, shown)


def _planner_imported(run: Inputs) -> None:
    """The stages this run's plan goes through imported (ortools and pandas with them),
    then the cycle collector on again (`collector.py`)."""
    from gpusolve.analyses import payback  # noqa: F401
    from gpusolve.plan import assemble  # noqa: F401
    from gpusolve.runs import collector

    if run.reqs.phased:
        from gpusolve.plan.phased import solve  # noqa: F401
    elif run.reqs.scenarios:
        from gpusolve.plan import twostage  # noqa: F401
    else:
        from gpusolve.plan import single  # noqa: F401
    collector.resume()


def is_finished(plan: Outcome) -> bool:
    """A plan to show, write and analyse: found, proven optimal or not."""
    found = plan.status in ("optimal", "feasible")
    return found and (bool(plan.periods) if isinstance(plan, Schedule) else True)


def _with_launch_files(
    shown: CommandOutput, plan: Outcome, run: Inputs, folder: Path
) -> CommandOutput:
    """--launch DIR: each deployment's launch files, written only for a finished plan; for
    a schedule, each deployment's in the period it starts (`runs/launch.py`)."""
    from dataclasses import replace

    from gpusolve.runs.launch import outcome_launch_files
    from gpusolve.runs.output import OutputFile

    if not is_finished(plan):
        return replace(shown, after=(*shown.after, f"no plan: no launch files written to {folder}"))
    files = outcome_launch_files(plan, run.reqs, run.catalog)
    written_files = tuple(OutputFile(folder / f.path, f.text) for f in files)
    folders = tuple(sorted({f.path.parent for f in written_files}))
    said = f"wrote {len(files)} launch files under {folder} (see {folder / 'README.md'})"
    return replace(
        shown,
        folders=(*shown.folders, *folders),
        files=(*shown.files, *written_files),
        after=(*shown.after, said),
    )


def plan_options(request: PlanRequest, schedule: bool = False) -> PlanOptions:
    """The solver's limits: the work limit (deterministic) always; the wall clock as given,
    else a single plan's default and none for a schedule."""
    from gpusolve.optimize.ir import SolveConfig
    from gpusolve.plan.solved import PlanOptions

    wall = request.time_limit_s
    if wall is None:
        wall = float("inf") if schedule else DEFAULT_WALL_S
    config = SolveConfig(
        time_limit_s=wall,
        work_limit=request.work_limit or DEFAULT_WORK_LIMIT,
        workers=request.workers,
        seed=request.seed,
        schedule_solver=request.schedule_solver,
    )
    return PlanOptions(
        config=config,
        top_k=request.top_k,
        why_not=request.why_not,
        timings=request.timings,
        robust=request.robust or "expected",
    )


def solve_interruptibly(
    run: Inputs, options: PlanOptions, progress: Progress, bar: bool = False
) -> Solved:
    """The finished plan and the analyses asked for that search for plans (top-k,
    why-not), in a worker thread so that Ctrl-C or SIGTERM stops their searches too and
    keeps the best plan so far; a long solve shows its progress on a terminal."""
    import gpusolve.plan as planning  # `make_plan` looked up at each call: tests replace it
    from gpusolve.optimize.interrupt import run_interruptibly
    from gpusolve.runs.progress import SolveProgress

    shown = SolveProgress(bar, run.reqs.currency)
    say = shown.saying(progress)
    try:
        return run_interruptibly(
            lambda: analysed(planning.make_plan(run, options, say, shown.watch), say),
            on_search=lambda: progress("searching (Ctrl-C stops and prints the best plan so far)"),
            tick=shown.tick,
        )
    finally:
        shown.close()


def analysed(solved: Solved, progress: Progress) -> Solved:
    """`solved` with its next-best plans (--top-k), why-not lines (--why-not) and its
    payback against the cheapest all-rental plan."""
    from gpusolve.analyses import payback

    # top-k and why-not import the schedule planner's modules: only when asked for.
    if solved.options.top_k:
        from gpusolve.analyses import topk

        solved = solved.with_plan(topk.run(solved, progress))
    if solved.options.why_not is not None:
        from gpusolve.analyses import whynot

        solved = solved.with_plan(whynot.run(solved, progress))
    return solved.with_plan(payback.run(solved, progress))


def _cluster(request: PlanRequest) -> Cluster | None:
    """The Ray cluster the sweeps run on (--cluster, else RAY_ADDRESS); None: the pool."""
    from gpusolve.analyses.cluster import Files, cluster_of

    files = Files(request.requirements, request.catalog_paths, request.rules_paths)
    return cluster_of(request.cluster, files)


def _with_ranges(
    solved: Solved,
    bar: bool,
    progress: Progress,
    bounded: bool = False,
    cluster: Cluster | None = None,
) -> Outcome:
    from gpusolve.analyses import sensitivity

    if bounded:
        progress(
            "sensitivity for the memo: re-solving with each of the plan's prices and cards "
            "moved (--no-sensitivity skips it)"
        )
    else:
        progress("sensitivity: re-solving with each price and card efficiency moved")
    return sensitivity.run(solved, bar=bar, bounded=bounded, cluster=cluster)


def _with_cash(s: Schedule, run: Inputs) -> Schedule:
    """A finished schedule with its cash view (a single plan gets its own when assembled)."""
    from gpusolve.explain.financing import schedule_cash
    from gpusolve.load.finance import load_terms

    f = run.reqs.finance
    lead = {k: server.lead_time_weeks for k, server in run.catalog.servers.items()}
    cash = schedule_cash(
        s,
        load_terms(),
        lead,
        how=f.financing,
        channel=f.payment_channel,
        discount_rate=f.discount_rate,
    )
    return s.model_copy(update={"cash": cash})


def _with_risk(solved: Solved, request: PlanRequest, progress: Progress) -> Outcome:
    from gpusolve.analyses import risk

    what = "re-planning" if request.replan else "re-pricing"
    progress(f"risk: {what} the plan over {request.risk:,} draws (seed {request.seed})")
    asked = risk.RiskRequest(request.risk, request.seed, request.replan, _cluster(request))
    try:
        return risk.run(solved, asked)
    except ValueError as exc:
        raise OptionConflict(str(exc)) from exc


def check_options(run: Inputs, request: PlanRequest) -> None:
    """--robust needs scenarios; a two-stage plan has no --top-k yet; a schedule is not
    hedged over scenarios (the requirements' loader says so, located)."""
    has_scenarios = run.reqs.scenarios is not None
    if request.replan and not request.risk:
        raise OptionConflict("--replan re-plans the draws of --risk N: add --risk")
    if request.risk and run.reqs.phased:
        raise OptionConflict("--risk draws over a single plan, not a schedule (periods:)")
    if request.robust is not None and (not has_scenarios or run.reqs.phased):
        why = (
            "a purchase schedule (periods:) is not hedged over scenarios" if run.reqs.phased else ""
        )
        raise OptionConflict(
            "--robust needs a scenarios: block in the requirements (see "
            "examples/scenarios-demand-growth.yaml)"
            + (f"; {why}" if why else "")
            + "; drop --robust"
        )
    if has_scenarios and request.top_k and not run.reqs.phased:
        raise OptionConflict(
            "--top-k does not apply to a plan with scenarios: drop it, or remove the "
            "scenarios: block"
        )


def plan_output(plan: Outcome, request: PlanRequest, run: Inputs) -> str:
    """The HTML report of a finished plan or schedule, else the bill of materials (--bom),
    else the plan in its format; a run without a plan explains itself as text, never as
    markup."""
    from gpusolve.render import render_bill, render_plan

    finished = is_finished(plan)
    if request.fmt == "html" and finished:
        from gpusolve.report.html import context_for

        paths = list(request.catalog_paths)
        if isinstance(plan, Schedule):
            from gpusolve.report.schedule import schedule_html

            return schedule_html(plan, context_for(run.catalog, paths, [request.requirements]))
        from gpusolve.report.html import plan_html

        ctx = context_for(run.catalog, paths, [request.requirements], run.reqs, plan)
        return plan_html(plan, ctx)
    if request.cash and finished and plan.cash is not None:
        from gpusolve.render.risk import cash_csv

        currency = plan.currency if isinstance(plan, Schedule) else run.reqs.currency
        return cash_csv(plan.cash, currency)
    if request.bom and (finished or isinstance(plan, Plan)):
        return render_bill(plan, request.fmt)
    if request.fmt == "markdown" and finished:
        from gpusolve.render.about import about

        return render_plan(plan, "markdown", about(run.catalog, [request.requirements]))
    return render_plan(plan, _terminal(request.fmt))


def interrupted(plan: Outcome, request: PlanRequest) -> RunResult[Outcome]:
    """Ctrl-C or SIGTERM: the best plan or schedule so far (or its bill of materials with
    --bom), marked, and exit 130. An existing -o file is left as it was: only a finished
    run replaces it."""
    from gpusolve.render import render_bill, render_plan

    if not _found(plan):
        nothing = ("interrupted before any plan was found",)
        return RunResult(plan, CommandOutput(after=nothing, exit_code=INTERRUPTED_EXIT))
    marked = _marked_interrupted(plan)
    if request.bom:  # csv included: the bill of materials the user asked for
        text = render_bill(marked, _terminal(request.fmt))
        what = "the bill of materials above is of the best plan found so far"
    else:
        text = render_plan(marked, _terminal(request.fmt))
        what = "the plan above is the best found so far"
    kept = f"; {request.output} left as it was" if request.output is not None else ""
    said = (f"interrupted: {what}, not proven optimal{kept}",)
    return RunResult(marked, CommandOutput(stdout=text, after=said, exit_code=INTERRUPTED_EXIT))


def _found(plan: Outcome) -> bool:
    if isinstance(plan, Schedule):
        return bool(plan.periods)
    return plan.status != "infeasible" and plan.cost is not None


def _marked_interrupted(plan: Outcome) -> Outcome:
    if isinstance(plan, Schedule):
        return plan.model_copy(update={"status": "interrupted"})
    return plan.model_copy(
        update={
            "status": "interrupted",
            "solver": plan.solver.model_copy(update={"proven_optimal": False}),
        }
    )


def _sensitivity_interrupted(plan: Outcome, fmt: str) -> CommandOutput:
    from gpusolve.render import render_plan

    return CommandOutput(
        stdout=render_plan(plan, _terminal(fmt)),
        after=("interrupted during the sensitivity analysis: the plan above has none",),
        exit_code=INTERRUPTED_EXIT,
    )


def _shown(text: str, finished: bool, output: Path | None, code: int) -> CommandOutput:
    """A finished plan replaces -o whole; without one, an existing -o keeps the last
    successful plan and the explanation goes to the terminal."""
    if output is not None and finished:
        return CommandOutput(files=(written(output, text),), exit_code=code)
    if output is not None:
        return CommandOutput(
            before=(f"no plan: {output} left as it was",), stdout=text, exit_code=code
        )
    return CommandOutput(stdout=text, exit_code=code)


def _terminal(fmt: str) -> str:
    """HTML is a file to open in a browser: on the terminal the same content is text."""
    return "text" if fmt == "html" else fmt
