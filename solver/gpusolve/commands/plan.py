"""`gpusolve plan`: the cheapest plan that meets every workload, and why."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import click

from gpusolve.commands.options import (
    SEED_RANGE,
    FiniteFloatRange,
    catalog_option,
    check_output,
    format_option,
    output_option_with,
    progress_printer,
    quiet_option,
    require_output_for_html,
    rules_option,
    time_limit_option,
)
from gpusolve.models.plan import Plan
from gpusolve.render import FORMATS

Progress = Callable[[str], None]

OBJECTIVES = ("min-tco", "min-capex", "min-monthly", "max-throughput")
# Plan status -> exit code: a proven "no" (1) and "no answer in time" (3) must differ,
# so a script can retry the second with more time and not the first.
EXIT_CODES = {"optimal": 0, "feasible": 0, "infeasible": 1, "timeout": 3, "unknown": 3}


@click.command("plan")
@click.argument("requirements", type=click.Path(path_type=Path))
@catalog_option
@rules_option
@format_option(*FORMATS, "html", "csv")
@output_option_with("Write the plan to this file (whole or not at all) instead of stdout.")
@click.option(
    "--objective",
    type=click.Choice(OBJECTIVES),
    default=None,
    help="Override the requirements' objective. max-throughput needs a budget.",
)
@click.option(
    "--capex-max",
    type=FiniteFloatRange(min=0, min_open=True, max=1e15),
    default=None,
    help="Override the capex cap (run currency).",
)
@click.option(
    "--monthly-max",
    type=FiniteFloatRange(min=0, min_open=True, max=1e15),
    default=None,
    help="Override the monthly spend cap (run currency).",
)
@click.option(
    "--top-k",
    type=click.IntRange(0, 20),
    default=0,
    show_default=True,
    help="Also show the next N distinct plans (different card or site).",
)
@click.option(
    "--why-not",
    "why_not",
    metavar="ID",
    default=None,
    help="Explain, per workload, why this card/server/colo/cloud offer was not chosen.",
)
@time_limit_option(60.0, "Seconds the solver may spend (per solve).")
@click.option(
    "--workers",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="CP-SAT workers; 1 is deterministic.",
)
@click.option(
    "--robust",
    type=click.Choice(["expected", "worst"]),
    default=None,
    help="With a scenarios: block: minimise the expected TCO (default) or the worst case.",
)
@click.option("--seed", type=SEED_RANGE, default=1, show_default=True, help="Solver random seed.")
@click.option("--timings", is_flag=True, help="Include solve wall time in the output.")
@click.option(
    "--sensitivity",
    is_flag=True,
    help="For each price in the plan and each candidate card's efficiency, the range over "
    "which the plan stays optimal and the plan beyond each end (re-solves over a process "
    "pool, one per core).",
)
@quiet_option
@click.option(
    "--bom",
    is_flag=True,
    help="Print only the bill of materials (--format csv: one row per item, for a spreadsheet).",
)
def plan(
    requirements: Path,
    catalog_paths: tuple[Path, ...],
    rules_paths: tuple[Path, ...],
    fmt: str,
    output: Path | None,
    objective: str | None,
    capex_max: float | None,
    monthly_max: float | None,
    top_k: int,
    why_not: str | None,
    time_limit: float,
    workers: int,
    robust: str | None,
    seed: int,
    timings: bool,
    sensitivity: bool,
    quiet: bool,
    bom: bool,
) -> None:
    """Find the cheapest plan for the workloads in REQUIREMENTS (a YAML file).

    \b
    The plan says which servers (hence cards) to buy and how many, in which colocation
    offer and how many racks - or which cloud rental - so that every workload fits in
    memory with headroom, meets its deadline or throughput, and every rack stays within
    its power, space and cooling. It lists the constraints that bind, the rules that
    fired (with their heuristic H-number), and advice.

    \b
    Examples:
      gpusolve plan examples/finetune-7b-deadline.yaml
      gpusolve plan reqs.yaml --catalog my-quotes.yaml --format markdown -o memo.md
      gpusolve plan reqs.yaml --format html -o report.html
      gpusolve plan reqs.yaml --top-k 3 --why-not h100-sxm
      gpusolve plan reqs.yaml --objective max-throughput --capex-max 5000000
      gpusolve plan reqs.yaml --bom --format csv -o bom.csv
      gpusolve plan reqs.yaml --sensitivity

    \b
    Cost: TCO itemised (capex per server SKU, rent, energy and bandwidth per site, cloud
    hours x price) and soft-rule penalties apart (rule, reason, deployment; not spent).
    Money objectives minimise TCO + penalties. max-throughput adds, per workload,
    throughput_weight (default 1) x its throughput / its best reachable throughput:
    tokens/s of different models are never added. --top-k and --why-not deltas are
    given in TCO and in penalties (and per workload in tokens/s under max-throughput).

    \b
    Exit codes: 0 a plan was found (status "optimal", or "feasible" with its gap to
    the best bound when the time ran out first); 1 no plan exists, proven (status
    "infeasible"; the requirements that conflict and how far each must move are
    printed); 2 invalid input; 3 no plan found within --time-limit and none proven
    impossible (status "timeout", with the best bound; try a longer --time-limit).
    GB means 10^9 bytes; money is in the run's currency.
    """
    from gpusolve.atomic import write_text_atomic
    from gpusolve.bom import locate
    from gpusolve.optimize.interrupt import requested as interrupt_requested
    from gpusolve.optimize.interrupt import run_interruptibly
    from gpusolve.optimize.ir import SolveConfig
    from gpusolve.pipeline import prepare_run
    from gpusolve.planner import PlanOptions, make_plan
    from gpusolve.render import render_plan
    from gpusolve.render.bom import render_bom

    progress = progress_printer(quiet)
    if fmt == "csv" and not bom:
        raise click.UsageError("--format csv writes the bill of materials: add --bom")
    if fmt == "html" and bom:
        raise click.UsageError("the HTML report holds the bill of materials: drop --bom")
    require_output_for_html(fmt, output)
    check_output(output, [requirements, *catalog_paths, *rules_paths])

    run = prepare_run(
        requirements,
        catalog_paths,
        rules_paths,
        objective=objective,
        capex_max=capex_max,
        monthly_max=monthly_max,
        progress=progress,
    )
    if why_not is not None:
        run.check_known_id(why_not)
    _check_robust(run.reqs.scenarios is not None, robust, top_k or sensitivity, why_not)
    options = PlanOptions(
        config=SolveConfig(time_limit_s=time_limit, workers=workers, seed=seed),
        top_k=top_k,
        why_not=why_not,
        timings=timings,
        robust=robust or "expected",
    )
    result = run_interruptibly(
        lambda: make_plan(run.reqs, run.catalog, run.policies, run.rules, options, progress),
        on_search=lambda: progress("searching (Ctrl-C stops and prints the best plan so far)"),
    )
    result = run.finish(result)  # market, compliance, exclusions, sources
    result = result.model_copy(update={"bom": locate(result.bom, result.sources)})
    if interrupt_requested():
        _stop_interrupted(result, "text" if fmt in ("html", "csv") else fmt, output, progress)
    finished = result.status in ("optimal", "feasible")  # a plan, finished
    if sensitivity and finished and not bom:  # ranges need a plan
        from gpusolve.sensitivity import with_sensitivity

        progress("sensitivity: re-solving with each price and card efficiency moved")
        try:
            result = with_sensitivity(
                result,
                run.reqs,
                run.catalog,
                run.policies,
                options.config,
                bar=not quiet,
                timings=timings,
            )
        except KeyboardInterrupt:  # the plan itself is finished: print it, without ranges
            click.echo(render_plan(result, "text" if fmt == "html" else fmt), nl=False)
            progress("interrupted during the sensitivity analysis: the plan above has none")
            sys.exit(INTERRUPTED_EXIT)
    if fmt == "html" and finished:
        from gpusolve.report.html import context_for, plan_html

        text = plan_html(result, context_for(run.catalog, list(catalog_paths), [requirements]))
    elif bom:
        text = render_bom(result, fmt)
    else:  # html without a plan: the explanation as text on the terminal, never markup
        text = render_plan(result, "text" if fmt == "html" else fmt)
    if output is not None and finished:
        write_text_atomic(output, text)
        progress(f"wrote {output}")
    else:
        if output is not None:  # an existing -o keeps the last successful plan
            progress(f"no plan: {output} left as it was")
        click.echo(text, nl=False)
    code = EXIT_CODES.get(result.status, 0)
    if code:
        sys.exit(code)


def _check_robust(
    has_scenarios: bool, robust: str | None, other_plans: int | bool, why_not: str | None
) -> None:
    """--robust needs scenarios; a two-stage plan has no --top-k, --sensitivity or
    --why-not yet."""
    if robust is not None and not has_scenarios:
        raise click.UsageError(
            "--robust needs a scenarios: block in the requirements (see "
            "examples/scenarios-demand-growth.yaml); drop --robust"
        )
    if has_scenarios and (other_plans or why_not is not None):
        raise click.UsageError(
            "--top-k, --sensitivity and --why-not do not apply to a plan with scenarios: "
            "drop them, or remove the scenarios: block"
        )


INTERRUPTED_EXIT = 130  # 128 + SIGINT, as a shell reports a Ctrl-C


def _stop_interrupted(result: Plan, fmt: str, output: Path | None, progress: Progress) -> None:
    """Ctrl-C or SIGTERM: print the best plan so far, marked, and exit 130. An existing
    -o file is left as it was: only a finished run replaces it."""
    from gpusolve.render import render_plan

    if result.status == "infeasible" or result.cost is None:
        progress("interrupted before any plan was found")
        sys.exit(INTERRUPTED_EXIT)
    marked = result.model_copy(
        update={
            "status": "interrupted",
            "solver": result.solver.model_copy(update={"proven_optimal": False}),
        }
    )
    click.echo(render_plan(marked, fmt), nl=False)
    progress(
        "interrupted: the plan above is the best found so far, not proven optimal"
        + (f"; {output} left as it was" if output is not None else "")
    )
    sys.exit(INTERRUPTED_EXIT)
