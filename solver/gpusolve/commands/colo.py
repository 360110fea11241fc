"""`gpusolve colo`: compare colocation offers for a fleet of servers you own or will buy."""

from __future__ import annotations

from pathlib import Path

import click

from gpusolve.commands.options import (
    catalog_option,
    check_output,
    format_option,
    output_option_with,
    progress_printer,
    require_output_for_html,
    rules_option,
)


@click.command("colo")
@click.argument("fleet_path", metavar="FLEET.yaml", type=click.Path(path_type=Path))
@catalog_option
@rules_option
@format_option("text", "json", "markdown", "html")
@output_option_with("Write to this file (whole or not at all) instead of stdout.")
@click.option(
    "--top",
    type=click.IntRange(min=1),
    default=None,
    help="Show only the N best offers (all infeasible ones are still counted).",
)
def colo(
    fleet_path: Path,
    catalog_paths: tuple[Path, ...],
    rules_paths: tuple[Path, ...],
    fmt: str,
    output: Path | None,
    top: int | None,
) -> None:
    """Rank the catalogue's colocation offers for the servers in FLEET.yaml.

    \b
    For every offer: whether it can host the fleet (rack power per server, rack units,
    cooling, fabric for multi-node jobs, 24-hour operations, dual power, regions, racks
    available), how many racks it takes and how the servers fill them (packed exactly),
    the monthly bill (rack rent + energy at kW x utilisation x PUE x hours x price +
    bandwidth) and the total over the horizon. Offers that cannot host it say why.
    Soft concerns (no IDC licence H19, no 24-hour operations H37, no BGP H36) are noted.
    Each fleet line at each offer is judged by the placement rules `plan` applies (the
    shipped rules and --rules files): a failed require refuses the offer, a missed prefer
    adds its penalty, each named per offer; offers rank by TCO + penalties, like plans.
    Rules that depend on the workload (training only, long runs ...) are listed as not
    judged: a fleet does not say what runs on it; `plan` applies them.

    \b
    Example:
      gpusolve colo examples/fleets/h100-training-cluster.yaml --top 5

    \b
    Exit codes: 0 the ranking is complete (offers that cannot host the fleet say why,
    even when none can); 2 invalid input; 3 no offer was shown able to host the fleet
    and some ran out of solver time without being proven unable ("timed_out").
    """
    from gpusolve.commands.deliver import invoke
    from gpusolve.runs.colo import ColoRequest, run_colo

    require_output_for_html(fmt, output)
    check_output(output, [fleet_path, *catalog_paths, *rules_paths])
    request = ColoRequest(fleet_path, catalog_paths, rules_paths, fmt, output, top)
    invoke(lambda: run_colo(request), progress_printer(quiet=False))  # colo has no -q: always said
