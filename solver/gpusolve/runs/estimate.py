"""`gpusolve estimate` from its files to what it shows: load through the same pipeline as
`plan` (so each workload gets the headroom and framework settings its rules give it),
build the report (`gpusolve.estimate.report`) and render it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gpusolve.estimate.report import LayoutChoice as LayoutChoice  # re-exported for the command
from gpusolve.runs.output import BadOption, CommandOutput, OutputFile, RunResult

if TYPE_CHECKING:
    from gpusolve.models.catalog import Card, Catalog
    from gpusolve.models.estimate import EstimateReport


@dataclass(frozen=True)
class EstimateRequest:
    requirements: Path
    catalog_paths: tuple[Path, ...]
    rules_paths: tuple[Path, ...]
    card_ids: tuple[str, ...] = ()  # none: every catalogue card
    layout: LayoutChoice = field(default_factory=LayoutChoice)
    fmt: str = "text"
    output: Path | None = None


def run_estimate(request: EstimateRequest) -> RunResult[EstimateReport]:
    """Everything `estimate` does between parsing and printing. Raises InputError (bad
    files) and BadOption (an unknown --card, a layout that cannot be built)."""
    from gpusolve.estimate.report import LayoutError, build_report
    from gpusolve.plan.inputs import prepare_run

    run = prepare_run(request.requirements, request.catalog_paths, request.rules_paths)
    # The parameters `plan` uses: defaults, then the rules, then the user's headroom.
    per_workload = {name: policy.params for name, policy in run.policies.items()}
    cards = chosen_cards(run.catalog, request.card_ids)
    try:
        report = build_report(run.reqs, run.catalog, cards, per_workload, request.layout)
    except LayoutError as exc:
        raise BadOption(exc.option, str(exc)) from None
    text = estimate_report_text(report, request)
    if request.output is not None:
        return RunResult(
            report,
            CommandOutput(files=(OutputFile(request.output, text, f"wrote {request.output}"),)),
        )
    return RunResult(report, CommandOutput(stdout=text))


def chosen_cards(catalog: Catalog, card_ids: tuple[str, ...]) -> list[Card]:
    if not card_ids:
        return list(catalog.cards.values())
    unknown = [c for c in card_ids if c not in catalog.cards]
    if unknown:
        raise BadOption(
            "--card",
            f"unknown card {', '.join(unknown)}; known cards: {', '.join(catalog.cards)}",
        )
    return [catalog.cards[c] for c in card_ids]


def estimate_report_text(report: EstimateReport, request: EstimateRequest) -> str:
    from gpusolve.render.estimate import estimate_text

    if request.fmt == "json":
        return json.dumps(report.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
    if request.fmt == "html":
        from gpusolve.report.html import ReportContext, estimate_html

        return estimate_html(report, ReportContext(inputs=[str(request.requirements)]))
    return estimate_text(report)
