"""`gpusolve plan`: the cheapest plan that meets every workload, and why."""

from __future__ import annotations

from pathlib import Path

import click

from gpusolve.commands.options import (
    SEED_RANGE,
    FiniteFloatRange,
    catalog_option,
    check_launch_folder,
    check_output,
    default_option,
    format_option,
    output_option_with,
    progress_printer,
    quiet_option,
    require_output_for_html,
    rules_option,
    time_limit_option,
    work_limit_option,
)
from gpusolve.render import FORMATS

OBJECTIVES = ("min-tco", "min-capex", "min-monthly", "max-throughput")


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
@default_option(
    "--top-k",
    click.IntRange(0, 20),
    0,
    "Also show the next N distinct plans (different card or site).",
)
@click.option(
    "--why-not",
    "why_not",
    metavar="ID",
    default=None,
    help="Explain, per workload, why this card/server/colo/cloud offer was not chosen.",
)
@work_limit_option(
    "Work the solver may spend per solve, in CP-SAT's deterministic time (about a second "
    "of one idle core): the same inputs stop at the same point on an idle or a busy "
    "machine, so they give the same plan and status every run. Default: 120.",
)
@time_limit_option(
    None,
    "Wall-clock seconds for the whole command (candidates, every solve, the analyses), on "
    "top of --work-limit (the answer may then depend on the machine's load). Default: 60 "
    "for a plan's staged search, none for a schedule.",
)
@default_option(
    "--workers",
    click.IntRange(1, 64),
    1,
    "CP-SAT workers; 1 is deterministic.",
)
@click.option(
    "--schedule-solver",
    "schedule_solver",
    type=click.Choice(["race", "highs", "cp-sat"]),
    default="race",
    show_default=True,
    help="Who solves a schedule (periods:). race: CP-SAT and HiGHS at once (each is the "
    "faster on some schedules); the winner is decided by the work each has "
    "done, not by which finished first, so the same schedule comes back every run. "
    "highs (two threads) or cp-sat (--workers) alone.",
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
@click.option(
    "--cash",
    is_flag=True,
    help="With --format csv: the cash by month (purchases on payment terms, financing, "
    "running costs, upkeep, total, cumulative, present value) for a spreadsheet.",
)
@click.option(
    "--risk",
    "risk",
    type=click.IntRange(0, 1_000_000),
    default=0,
    metavar="N",
    help="Draw N worlds (server prices from their catalogue ranges, card efficiency within "
    "the model's +-20% validation band, each workload's demand within an illustrative "
    "+-20%; seeded by --seed) and give this plan's TCO at P10/P50/P90 with a histogram (the "
    "plan re-priced, vectorised) and the share of draws whose demand it cannot meet.",
)
@click.option(
    "--replan",
    is_flag=True,
    help="With --risk: plan each draw again and say how often each plan is the cheapest "
    "(on the local process pool, or a Ray cluster with --cluster or RAY_ADDRESS).",
)
@click.option(
    "--cluster",
    metavar="ADDRESS",
    default=None,
    help="The Ray cluster for the sweeps: --risk N --replan's draws and the sensitivity's "
    "parameters of a plan or a hedged plan (a schedule's stay here) ('local' starts one; "
    "default RAY_ADDRESS, else the local process pool; "
    "needs the optional extra: pip install 'gpusolve[ray]').",
)
@click.option(
    "--no-sensitivity",
    "no_sensitivity",
    is_flag=True,
    help="With --format html or markdown: skip the bounded sensitivity the memo runs by "
    "default (the plan's own prices and cards re-solved) to name what would change the "
    "decision; the memo then falls back on cost shares and the all-rental margin.",
)
@quiet_option
@click.option(
    "--bom",
    is_flag=True,
    help="Print only the bill of materials (--format csv: one row per item, for a spreadsheet; "
    "with periods: per purchase period, with period and start_month columns).",
)
@click.option(
    "--launch",
    "launch",
    metavar="DIR",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Also write each deployment's launch files into DIR (made if missing): Megatron-LM "
    "arguments or a DeepSpeed config with torchrun and Slurm launchers for training, vLLM "
    "and SGLang command lines for serving, sized as the plan sized them.",
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
    work_limit: float | None,
    time_limit: float | None,
    workers: int,
    schedule_solver: str,
    robust: str | None,
    seed: int,
    timings: bool,
    sensitivity: bool,
    no_sensitivity: bool,
    cash: bool,
    risk: int,
    replan: bool,
    cluster: str | None,
    quiet: bool,
    bom: bool,
    launch: Path | None,
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
      gpusolve plan reqs.yaml --launch launch/

    \b
    Over time: with `periods:` in REQUIREMENTS (e.g. {length_months: 3}) the output is
    a purchase schedule: what to buy, where, the racks and rentals per period, capex per
    fiscal year against budget.capex_by_year, beside buy-now, rent-as-you-go and the
    single-period plan, all priced by one model, each period as a single plan is. Every
    option applies to it but --robust (a schedule is not hedged over scenarios).
      gpusolve plan examples/phased-growth.yaml --catalog examples/phased/catalog.yaml

    \b
    Cost: TCO itemised (capex per server SKU, rent, energy and bandwidth per site, cloud
    hours x price) and soft-rule penalties apart (rule, reason, deployment; not spent).
    Money objectives minimise TCO + penalties. max-throughput adds, per workload,
    throughput_weight (default 1) x its throughput / its best reachable throughput:
    tokens/s of different models are never added. --top-k and --why-not deltas are
    given in TCO and in penalties (and per workload in tokens/s under max-throughput).

    \b
    Exit codes: 0 a plan was found (status "optimal", or "feasible" with its gap to
    the best bound when the time ran out first; when the search found none in time,
    the all-rent or greedy fallback, checked and said so); 1 no plan exists, proven
    (status "infeasible"; the requirements that conflict and how far each must move
    are printed); 2 invalid input; 3 no plan found within --work-limit (or
    --time-limit), no fallback holds, and none proven impossible (status "timeout",
    with the best bound; try a longer limit); 130 interrupted (Ctrl-C or SIGTERM: the
    best plan so far, marked).
    GB means 10^9 bytes; money is in the run's currency.
    """
    from gpusolve.commands.deliver import invoke
    from gpusolve.runs.plan import PlanRequest, run_plan

    if fmt == "csv" and not (bom or cash):
        raise click.UsageError(
            "--format csv writes the bill of materials (--bom) or the cash by month (--cash): "
            "add one"
        )
    if cash and (bom or fmt != "csv"):
        raise click.UsageError("--cash writes the cash by month as CSV: --format csv, no --bom")
    if fmt == "html" and bom:
        raise click.UsageError("the HTML report holds the bill of materials: drop --bom")
    require_output_for_html(fmt, output)
    check_output(output, [requirements, *catalog_paths, *rules_paths])
    check_launch_folder(launch)
    request = PlanRequest(
        requirements,
        catalog_paths,
        rules_paths,
        fmt=fmt,
        output=output,
        objective=objective,
        capex_max=capex_max,
        monthly_max=monthly_max,
        top_k=top_k,
        why_not=why_not,
        time_limit_s=time_limit,
        work_limit=work_limit,
        workers=workers,
        schedule_solver=schedule_solver,  # type: ignore[arg-type]  # click.Choice checked it
        seed=seed,
        robust=robust,
        timings=timings,
        sensitivity=sensitivity,
        memo_ranges=not no_sensitivity,
        bom=bom,
        cash=cash,
        risk=risk,
        replan=replan,
        cluster=cluster,
        launch=launch,
        bar=not quiet,
    )
    progress = progress_printer(quiet)
    invoke(lambda: run_plan(request, progress), progress)
