"""A run's inputs, loaded once: requirements, catalogue, rules and market -> `Inputs`.

Shared by `plan`, `frontier`, `estimate` (through `gpusolve.runs`) and `rules explain`,
so each only composes stages. `plan/assemble.finish` fills a plan in from the `Inputs`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gpusolve.candidates.market import MarketView, apply_market, exclusions, resolve_market
from gpusolve.errors import InputError
from gpusolve.load import check_against_catalog, load_catalog, load_requirements_doc
from gpusolve.load.catalog import KINDS, LoadedCatalog
from gpusolve.load.yamlio import Document
from gpusolve.models.catalog import Catalog
from gpusolve.models.policy import WorkloadPolicy
from gpusolve.models.requirements import Budget, Requirements
from gpusolve.rules.summary import RulesSummary

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Inputs:
    """One run's inputs: the requirements (with command-line overrides), the catalogue,
    each workload's rule policy (market filters applied), the rules' trace, and where
    each catalogue item came from."""

    reqs: Requirements
    catalog: Catalog
    policies: dict[str, WorkloadPolicy]
    rules: RulesSummary
    loaded: LoadedCatalog | None = None  # where each item came from (for the plan's sources)
    market: MarketView | None = None
    requirements_path: Path | None = None  # the file the requirements came from (messages)

    def check_known_id(self, item: str) -> None:
        known = [i for k in KINDS for i in getattr(self.catalog, k)]
        if item not in known:
            close = difflib.get_close_matches(item, known, n=3)
            hint = f"did you mean {', '.join(close)}?" if close else "see `gpusolve catalog list`"
            raise InputError.single("--why-not", f"no catalogue item {item!r}", hint=hint)


@dataclass(frozen=True)
class LoadedFiles:
    """The requirements (with their document, for file:line errors) and the catalogue."""

    reqs: Requirements
    doc: Document
    loaded: LoadedCatalog


def load_inputs(
    requirements: Path,
    catalog_paths: Sequence[Path],
    *,
    adjust: Callable[[Requirements], Requirements] = lambda reqs: reqs,
) -> LoadedFiles:
    """The one load sequence every command uses: requirements, then `adjust` (command-line
    overrides, checked before the slower catalogue load), catalogue, cross-file checks."""
    reqs, doc = load_requirements_doc(requirements)
    reqs = adjust(reqs)
    loaded = load_catalog(list(catalog_paths) or None)
    check_against_catalog(reqs, doc, loaded.catalog)
    return LoadedFiles(reqs, doc, loaded)


def prepare_run(
    requirements: Path,
    catalog_paths: Sequence[Path],
    rules_paths: Sequence[Path],
    *,
    objective: str | None = None,
    capex_max: float | None = None,
    monthly_max: float | None = None,
    progress: Progress = lambda _: None,
) -> Inputs:
    inputs = load_inputs(
        requirements,
        catalog_paths,
        adjust=lambda reqs: _override(reqs, objective, capex_max, monthly_max),
    )
    reqs, loaded = inputs.reqs, inputs.loaded
    counts = loaded.counts()
    progress(
        f"catalogue: {counts['cards']} cards, {counts['servers']} servers, "
        f"{counts['colo_offers']} colo offers, {counts['cloud_offers']} cloud offers"
    )
    from gpusolve.rules.policy import evaluate_policies

    policies, summary = evaluate_policies(reqs, loaded.catalog, list(rules_paths))
    progress(f"rules: {len(summary.fired)} fired")
    market = resolve_market(reqs, loaded.catalog)
    policies = apply_market(policies, loaded.catalog, market)
    blocked = exclusions(loaded.catalog, market)
    if blocked:
        progress(
            f"market {market.market}: {len(blocked)} server(s) not bought "
            "(cards restricted for export to China; see allow_restricted:)"
        )
    return Inputs(reqs, loaded.catalog, policies, summary, loaded, market, requirements)


def _override(
    reqs: Requirements, objective: str | None, capex_max: float | None, monthly_max: float | None
) -> Requirements:
    budget = reqs.budget
    if capex_max is not None or monthly_max is not None:
        # The budgets the options do not name (per fiscal year, total) stay as written.
        budget = Budget.model_validate(
            budget.model_dump()
            | {
                "capex_max": capex_max if capex_max is not None else budget.capex_max,
                "monthly_max": monthly_max if monthly_max is not None else budget.monthly_max,
            }
        )
    update: dict[str, object] = {"budget": budget}
    if objective is not None:
        update["objective"] = objective
    result = reqs.model_copy(update=update)
    if (
        result.objective == "max-throughput"
        and budget.capex_max is None
        and budget.monthly_max is None
        and budget.total_max is None
    ):
        raise InputError.single(
            "--objective",
            "max-throughput needs a budget to spend",
            hint="give --capex-max or --monthly-max (or budget: in the requirements, "
            "total_max included)",
        )
    return result
