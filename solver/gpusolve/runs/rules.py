"""What `gpusolve rules` reports: the rules in effect, one rule, a check of rule files, and
(`explain`) which rules fire for each workload, what they set, which catalogue items their
require-rules remove, and their advice, without solving."""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gpusolve.errors import InputError, Problem
from gpusolve.load.yamlio import Document
from gpusolve.models.catalog import Catalog
from gpusolve.models.params import SPECS
from gpusolve.models.requirements import Requirements
from gpusolve.models.rules_report import (
    CheckedFile,
    LayoutRule,
    PreferOut,
    RemovalOut,
    RulesExplainReport,
    RulesInEffect,
    TraceEntryOut,
    ViaRemovedCards,
    WorkloadExplain,
)
from gpusolve.plan.inputs import load_inputs
from gpusolve.rules.engine import Removal, WorkloadRules, catalogue_removals, evaluate_workload
from gpusolve.rules.environment import ActivationCache
from gpusolve.rules.loader import CompiledRule, RuleSet, load_ruleset, read_rule_file
from gpusolve.rules.policy import model_sizes


def explain_rules(
    requirements: Path, catalog_paths: Sequence[Path], rules_paths: Sequence[Path]
) -> RulesExplainReport:
    inputs = load_inputs(requirements, catalog_paths)
    reqs, catalog = inputs.reqs, inputs.loaded.catalog
    ruleset = load_ruleset(list(rules_paths))
    sizes = model_sizes(reqs)
    _check_sized(reqs, inputs.doc, sizes)
    cache = ActivationCache(catalog.cards)
    workloads = []
    for w in reqs.workloads:
        wr = evaluate_workload(ruleset, w, reqs, model_sizes=sizes)
        removals = catalogue_removals(wr, catalog, cache)
        workloads.append(
            WorkloadExplain(
                workload=w.name,
                kind=w.kind,
                params_b=sizes.get(w.name),
                params={s.name: getattr(wr.params, s.name) for s in SPECS},
                param_origin=wr.param_origin,
                trace=[TraceEntryOut.model_validate(t.to_dict()) for t in wr.trace],
                removed=[_removal(r) for r in removals],
                via_removed_cards=_via_removed_cards(removals, catalog),
                not_checked_without_layouts=_layout_rules(wr),
                prefers={
                    kind: [PreferOut.model_validate(p, from_attributes=True) for p in preds]
                    for kind, preds in wr.prefers.items()
                },
                advice=wr.advice,
            )
        )
    return RulesExplainReport(
        rules=RulesInEffect(
            files=[str(f) for f in ruleset.files],
            in_effect=len(ruleset.rules),
            disabled=ruleset.disabled,
        ),
        workloads=workloads,
    )


def _check_sized(reqs: Requirements, doc: Document, sizes: dict[str, float]) -> None:
    """Rules read the model size; a workload without one cannot be explained."""
    problems = []
    for i, w in enumerate(reqs.workloads):
        if w.name in sizes:
            continue
        line, col = doc.locate(("workloads", i, "model")) or (None, None)
        problems.append(
            Problem(
                doc.name,
                line,
                col,
                f"workload {w.name}: unknown model preset {w.model.preset!r}",
                "give model.params_b, or a preset from `gpusolve estimate --help`",
            )
        )
    if problems:
        raise InputError(problems)


def _removal(r: Removal) -> RemovalOut:
    return RemovalOut.model_validate(r, from_attributes=True)


def _via_removed_cards(removals: list[Removal], catalog: Catalog) -> ViaRemovedCards:
    """Servers and cloud offers built on a card a require-rule removed go with it."""
    removed_cards = {i for r in removals if r.kind == "card" for i in r.removed}
    return ViaRemovedCards(
        servers=sorted(s.id for s in catalog.servers.values() if s.card in removed_cards),
        cloud_offers=sorted(o.id for o in catalog.cloud_offers.values() if o.card in removed_cards),
    )


def _layout_rules(wr: WorkloadRules) -> list[LayoutRule]:
    """Deployment-level rules need a layout, so they are checked when planning, not here."""
    return [
        LayoutRule(rule=p.rule, source=p.source, kind="require", expr=p.expr)
        for p in wr.requires.get("deployment", [])
    ] + [
        LayoutRule(rule=p.rule, source=p.source, kind="prefer", expr=p.expr)
        for p in wr.prefers.get("deployment", [])
    ]


def select_rules(ruleset: RuleSet, source: str | None) -> list[CompiledRule]:
    """The rules in effect, in evaluation order; only those citing `source` (HNN) if given."""
    return [r for r in ruleset.rules if source is None or r.source == source]


def rule_json(rule: CompiledRule) -> dict[str, Any]:
    r = rule.rule
    return {
        "id": r.id,
        "source": r.source,
        "title": r.title,
        "when": r.when,
        "set": rule.sets,
        "require": dict(r.require),
        "prefer": {k: p.model_dump() for k, p in r.prefer.items()},
        "advise": r.advise,
        "notes": r.notes,
        "file": rule.file,
        "line": rule.line,
        "shipped": rule.shipped,
        "replaced": rule.replaced,
    }


def list_json(ruleset: RuleSet, selected: list[CompiledRule]) -> dict[str, Any]:
    return {
        "rules": [rule_json(r) for r in selected],
        "disabled": ruleset.disabled,
        "files": [str(f) for f in ruleset.files],
    }


def find_rule(ruleset: RuleSet, rule_id: str) -> CompiledRule:
    """The rule with this id; LookupError says why not (disabled, or the closest ids)."""
    rule = ruleset.get(rule_id)
    if rule is not None:
        return rule
    if rule_id in ruleset.disabled:
        raise LookupError(f"rule {rule_id!r} is disabled by {ruleset.disabled[rule_id]}")
    close = difflib.get_close_matches(rule_id, ruleset.ids(), n=3)
    hint = f" Did you mean: {', '.join(close)}?" if close else " See `gpusolve rules list`."
    raise LookupError(f"no rule with id {rule_id!r}.{hint}")


def heuristic(source: str) -> dict[str, Any] | None:
    """The heuristic's summary from rules/heuristics.yaml (None if it cannot be read)."""
    from gpusolve.load import data_dir, parse_model, read_yaml
    from gpusolve.models.rules import HeuristicsFile

    path = data_dir("rules") / "heuristics.yaml"
    try:
        heuristics = parse_model(read_yaml(path), HeuristicsFile, "heuristics")
    except InputError:
        return None
    for h in heuristics.heuristics:
        if h.id == source:
            return h.model_dump()
    return None


def check_rule_files(paths: Sequence[Path]) -> tuple[list[CheckedFile], int]:
    """Each rule file as it loads after the shipped rules, and the rules then in effect;
    raises InputError (file:line, rule id) on any problem."""
    ruleset = load_ruleset(list(paths))
    shipped_ids = {r.id for r in load_ruleset().rules}
    checked = []
    for path in paths:
        files = sorted(path.glob("*.y*ml")) if path.is_dir() else [path]
        for file in files:
            if file.name == "heuristics.yaml":
                continue
            rule_file, _ = read_rule_file(file)
            ids = [r.id for r in rule_file.rules]
            overrides = sum(1 for i in ids if i in shipped_ids)
            checked.append(CheckedFile(file, len(ids), overrides, len(rule_file.disable)))
    return checked, len(ruleset.rules)
