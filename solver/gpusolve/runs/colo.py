"""`gpusolve colo` from its files to what it shows: load the fleet, rank the offers,
render, and the exit code of the ranking."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpusolve.models.colo import ColoReport
from gpusolve.runs.output import CommandOutput, OutputFile, RunResult

if TYPE_CHECKING:
    from gpusolve.models.catalog import Catalog

# Each offer's packing solve gets this long (fixed: `colo` has no --time-limit option).
OFFER_TIME_LIMIT_S = 10


@dataclass(frozen=True)
class ColoRequest:
    fleet: Path
    catalog_paths: tuple[Path, ...]
    rules_paths: tuple[Path, ...]
    fmt: str = "text"
    output: Path | None = None
    top: int | None = None


def run_colo(request: ColoRequest) -> RunResult[ColoReport]:
    """Everything `colo` does between parsing and printing; raises InputError on bad files."""
    from gpusolve.colo.compare import compare_offers
    from gpusolve.load import check_fleet, load_catalog, load_fleet
    from gpusolve.optimize.ir import SolveConfig
    from gpusolve.rules.loader import load_ruleset

    fleet, doc = load_fleet(request.fleet)
    catalog = load_catalog(list(request.catalog_paths) or None).catalog
    check_fleet(fleet, doc, catalog)
    ruleset = load_ruleset(list(request.rules_paths))
    config = SolveConfig(time_limit_s=OFFER_TIME_LIMIT_S, workers=1)
    report = compare_offers(fleet, catalog, config, ruleset)
    if any(row.feasible for row in report.offers):
        if request.output is not None:  # no "wrote" line: colo has no progress messages
            text = colo_report_text(report, request, catalog)
            return RunResult(report, CommandOutput(files=(OutputFile(request.output, text),)))
        return RunResult(report, CommandOutput(stdout=_terminal_text(report, request, catalog)))
    # No offer hosts the fleet: an -o file keeps its last ranking, the reasons go here.
    stdout = _terminal_text(report, request, catalog)
    if any(row.timed_out for row in report.offers):  # unproven: more time may find one
        output = CommandOutput(stdout=stdout, exit_code=3)
    else:  # like `plan`: no offer can host the fleet is exit 1, not a success
        cannot = ("no colocation offer can host this fleet",)
        output = CommandOutput(stdout=stdout, after=cannot, exit_code=1)
    return RunResult(report, output)


def _terminal_text(report: ColoReport, request: ColoRequest, catalog: Catalog) -> str:
    """Markup only goes to a file: on the terminal an HTML request shows the ranking as text."""
    from gpusolve.render.colo import colo_text

    if request.fmt == "html":
        return colo_text(report, request.top)
    return colo_report_text(report, request, catalog)


def colo_report_text(report: ColoReport, request: ColoRequest, catalog: Catalog) -> str:
    """The ranking in the requested format (HTML as a whole report page)."""
    from gpusolve.render.colo import colo_markdown, colo_text

    if request.fmt == "json":
        return json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
    if request.fmt == "markdown":
        return colo_markdown(report, request.top)
    if request.fmt == "html":
        from gpusolve.report.html import colo_html, context_for

        ctx = context_for(catalog, list(request.catalog_paths), [request.fleet])
        return colo_html(report, request.top, ctx)
    return colo_text(report, request.top)
