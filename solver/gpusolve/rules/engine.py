"""Evaluate a rule set for one workload: parameters, filters, preferences, advice, trace.

`evaluate_workload` runs the rules in order (shipped files, then user files). A rule
fires when its `when` is true; then

- `set` assigns parameters: a later rule's value replaces an earlier one, and the trace
  records both sides (`TraceEntry.previous`, `TraceEntry.overridden_by`);
- `require` adds a hard filter per candidate kind, `prefer` a penalty per violation;
- `advise` renders its message (placeholders see the final parameters).

Finally the user's `requirements.headroom`, when given, overrides any rule (traced as
`user`). Expressions may read `params`; they see the *final* values, found by running
the rules again while a parameter that some `when` reads changed (at most
`MAX_PASSES` times; a rule set that never settles is an input error).

On an evaluation error (rare after the static check; e.g. a division by zero) a `when`
is an input error at the rule (whether it applies is unknown, and planning on without it
would drop what it sets, requires or prefers); a `require` counts as failed (fail closed)
and a `prefer` as violated, the require with the error and its file:line as detail.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, NamedTuple

from gpusolve.errors import InputError
from gpusolve.models.catalog import Card, Catalog, CloudOffer, ColoOffer, Server
from gpusolve.models.params import Params
from gpusolve.models.requirements import Requirements, Workload
from gpusolve.rules.bindings import Bindings, EvalFailure
from gpusolve.rules.environment import (
    ActivationCache,
    Facts,
    estimate_params_b,
    params_facts,
    reqs_facts,
    workload_facts,
)
from gpusolve.rules.loader import CompiledPredicate, CompiledRule, ParamValue, RuleSet

MAX_PASSES = 4
CATALOG_KINDS = {
    "card": "cards",
    "server": "servers",
    "offer": "colo_offers",
    "cloud": "cloud_offers",
}


class Violation(NamedTuple):
    rule: str
    source: str
    title: str
    detail: str | None = None  # the evaluation error, if the predicate could not be decided


@dataclass
class TraceEntry:
    """One fired rule (or the user's headroom), in evaluation order."""

    order: int
    rule: str
    source: str
    title: str
    where: str
    set: dict[str, ParamValue] = field(default_factory=dict)
    previous: dict[str, tuple[ParamValue, str]] = field(default_factory=dict)  # name -> (value, by)
    overridden_by: dict[str, str] = field(default_factory=dict)  # name -> later rule / "user"
    require: dict[str, str] = field(default_factory=dict)  # kind -> expression
    # kind -> (expr, share of the option's cost, money penalty): one of the two is None
    prefer: dict[str, tuple[str, float | None, float | None]] = field(default_factory=dict)
    advice: str | None = None
    # Kept for the rules-explain report's shape: `when` errors now stop the run.
    error: str | None = None

    @property
    def fired(self) -> bool:
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["previous"] = {k: {"value": v, "by": by} for k, (v, by) in self.previous.items()}
        out["prefer"] = {
            k: {"expr": e, "share": sh, "penalty": p} for k, (e, sh, p) in self.prefer.items()
        }
        out["fired"] = self.fired
        return out


@dataclass
class WorkloadRules:
    """What the rules decided for one workload."""

    workload: str
    params: Params
    requires: dict[str, list[CompiledPredicate]]
    prefers: dict[str, list[CompiledPredicate]]
    advice: list[str]
    trace: list[TraceEntry]
    param_origin: dict[str, str]  # parameter -> rule id, "default" or "user"
    _context: tuple[Facts, ...] = field(default=(), repr=False)
    _selected: dict[tuple[str, str, bool | None], list[CompiledPredicate]] = field(
        default_factory=dict, repr=False
    )
    _owners: dict[str, Facts] = field(default_factory=dict, repr=False)
    # Outcomes for catalogue items (cards, servers, offers, clouds), whose facts are built
    # once per item: the candidates stage asks about the same card or offer for every server
    # and layout (about half of all evaluations). Keyed by the facts' identity; the facts
    # are kept in the value so that the identity cannot be reused.
    _memo: dict[tuple[str, str, int, bool | None], tuple[Facts, Any]] = field(
        default_factory=dict, repr=False
    )

    def __post_init__(self) -> None:
        for facts in self._context:
            self._owners.update(facts.owners)

    def _predicates(self, which: str, kind: str, site: bool | None) -> list[CompiledPredicate]:
        key = (which, kind, site)
        found = self._selected.get(key)
        if found is None:
            source = self.requires if which == "require" else self.prefers
            found = self._selected[key] = _select(source.get(kind), site)
        return found

    @property
    def fired(self) -> list[str]:
        return [t.rule for t in self.trace if t.fired and t.rule != "user"]

    def bindings(self, facts: Facts) -> Bindings:
        return Bindings(facts, base=self._owners)

    def check(self, kind: str, facts: Facts, *, site: bool | None = None) -> list[Violation]:
        """Failed `require` predicates of this kind for one candidate ([] = allowed).

        `site` selects deployment predicates by whether they read `offer`: False = only
        those that do not (check once per layout), True = only those that do (check per
        layout and site), None = all.
        """
        predicates = self._predicates("require", kind, site)
        if not predicates:
            return []
        return list(self._memoised("require", kind, facts, site, self._check))

    def _check(self, kind: str, facts: Facts, site: bool | None) -> list[Violation]:
        bindings = Bindings(facts, base=self._owners)
        failed: list[Violation] = []
        for p in self._predicates("require", kind, site):
            result = p.program.evaluate(bindings)
            if result is True:
                continue
            detail = f"{p.where}: {result.message}" if isinstance(result, EvalFailure) else None
            failed.append(Violation(p.rule, p.source, p.title, detail))
        return failed

    def _memoised(
        self,
        which: str,
        kind: str,
        facts: Facts,
        site: bool | None,
        work: Callable[[str, Facts, bool | None], Any],
    ) -> Any:
        if kind not in CATALOG_KINDS:  # a catalogue item's facts are built once per run
            return work(kind, facts, site)
        key = (which, kind, id(facts), site)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = (facts, work(kind, facts, site))
        return found[1]

    def penalty(
        self, kind: str, facts: Facts, *, site: bool | None = None
    ) -> tuple[float, list[str]]:
        """Sum of the money `prefer` penalties this candidate incurs, and every rule it
        misses (`site` as in `check`); a rule charging a `share` adds nothing to the sum: its
        amount depends on the option's cost (`models.policy.charges`)."""
        predicates = self._predicates("prefer", kind, site)
        if not predicates:
            return 0.0, []
        total, rules = self._memoised("prefer", kind, facts, site, self._penalty)
        return total, list(rules)

    def _penalty(self, kind: str, facts: Facts, site: bool | None) -> tuple[float, list[str]]:
        bindings = Bindings(facts, base=self._owners)
        total = 0.0
        rules: list[str] = []
        for p in self._predicates("prefer", kind, site):
            if p.program.evaluate(bindings) is not True:
                total += p.penalty or 0.0
                rules.append(p.rule)
        return total, rules


def _select(
    predicates: list[CompiledPredicate] | None, site: bool | None
) -> list[CompiledPredicate]:
    if not predicates or site is None:
        return predicates or []
    return [p for p in predicates if ("offer" in p.reads) == site]


def resolve_model_sizes(
    reqs: Requirements, model_sizes: Mapping[str, float] | None = None
) -> dict[str, float]:
    """params_b per workload: the caller's (estimate stage) figure, the input's, or the shape's."""
    sizes: dict[str, float] = {}
    missing: list[str] = []
    for w in reqs.workloads:
        size = (model_sizes or {}).get(w.name)
        if size is None:
            size = estimate_params_b(w.model)
        if size is None:
            missing.append(w.name)
        else:
            sizes[w.name] = float(size)
    if missing:
        raise InputError.single(
            "requirements",
            f"workload(s) {', '.join(missing)}: the rules need the model size",
            hint="give model.params_b (or layers and hidden) for these workloads",
        )
    return sizes


def _reqs_facts(ruleset: RuleSet, reqs: Requirements, sizes: dict[str, float]) -> Facts:
    key = ("reqs", id(reqs), tuple(sorted(sizes.items())))
    cached = ruleset._cache.get("reqs")
    if cached is not None and cached[0] == key and cached[1] is reqs:
        return cached[2]
    facts = reqs_facts(reqs, sizes)
    ruleset._cache["reqs"] = (key, reqs, facts)
    return facts


def evaluate_workload(
    ruleset: RuleSet,
    workload: Workload,
    reqs: Requirements,
    *,
    model_sizes: Mapping[str, float] | None = None,
) -> WorkloadRules:
    """Run the rules for one workload of `reqs` (see the module docstring)."""
    sizes = resolve_model_sizes(reqs, model_sizes)
    shared = _reqs_facts(ruleset, reqs, sizes)
    wl_facts = workload_facts(workload, sizes[workload.name])
    read = ruleset.params_read()
    visible = Params()
    if reqs.headroom is not None:
        visible = visible.with_values(headroom=float(reqs.headroom))
    for _ in range(MAX_PASSES):
        result = _one_pass(ruleset, workload, reqs, wl_facts, shared, visible)
        changed = {name for name in read if getattr(result.params, name) != getattr(visible, name)}
        if not changed:
            return result
        visible = result.params
    raise InputError.single(
        "rules",
        f"workload {workload.name}: rules keep changing parameters that other rules read "
        f"({', '.join(sorted(changed))}) and never settle",
        hint="a rule's `when` should not depend on a parameter that it (or a rule it enables) sets",
    )


def _one_pass(
    ruleset: RuleSet,
    workload: Workload,
    reqs: Requirements,
    wl_facts: Facts,
    reqs_facts_: Facts,
    visible: Params,
) -> WorkloadRules:
    bindings = Bindings(wl_facts, reqs_facts_, params_facts(visible))
    values: dict[str, Any] = asdict(Params())
    origin: dict[str, tuple[str, TraceEntry | None]] = {n: ("default", None) for n in values}
    requires: dict[str, list[CompiledPredicate]] = {}
    prefers: dict[str, list[CompiledPredicate]] = {}
    trace: list[TraceEntry] = []
    advising: list[tuple[TraceEntry, CompiledRule]] = []
    for rule in ruleset.rules:
        outcome = rule.when.evaluate(bindings)
        if outcome is False:
            continue
        entry = TraceEntry(len(trace) + 1, rule.id, rule.source, rule.title, rule.where)
        trace.append(entry)
        if isinstance(outcome, EvalFailure):
            # Whether the rule applies is unknown: planning on as if it did not would
            # silently drop what it sets, requires or prefers.
            raise InputError.single(
                rule.file,
                f"when: could not be evaluated for workload {workload.name!r}: {outcome.message}",
                line=rule.when_line or rule.line,
                hint="fix the expression, or guard what can fail (`x != null && ...`)",
                context=f"rule {rule.id}",
            )
        for name, value in rule.sets.items():
            previous_by, previous_entry = origin[name]
            entry.set[name] = value
            entry.previous[name] = (values[name], previous_by)
            if previous_entry is not None:
                previous_entry.overridden_by[name] = rule.id
            values[name] = value
            origin[name] = (rule.id, entry)
        for kind, pred in rule.requires.items():
            requires.setdefault(kind, []).append(pred)
            entry.require[kind] = pred.expr
        for kind, pred in rule.prefers.items():
            prefers.setdefault(kind, []).append(pred)
            entry.prefer[kind] = (pred.expr, pred.share, pred.penalty)
        if rule.advise is not None:
            advising.append((entry, rule))
    if reqs.headroom is not None:
        entry = TraceEntry(len(trace) + 1, "user", "user", "requirements.headroom", "requirements")
        name = "headroom"
        previous_by, previous_entry = origin[name]
        entry.set[name] = float(reqs.headroom)
        entry.previous[name] = (values[name], previous_by)
        if previous_entry is not None:
            previous_entry.overridden_by[name] = "user"
        values[name] = float(reqs.headroom)
        origin[name] = ("user", entry)
        trace.append(entry)
    params = Params(**values)
    context = (wl_facts, reqs_facts_, params_facts(params))
    advice: list[str] = []
    final_bindings = Bindings(*context)
    for entry, rule in advising:
        assert rule.advise is not None
        entry.advice = rule.advise.render(final_bindings)
        advice.append(entry.advice)
    return WorkloadRules(
        workload=workload.name,
        params=params,
        requires=requires,
        prefers=prefers,
        advice=advice,
        trace=trace,
        param_origin={name: by for name, (by, _) in origin.items()},
        _context=context,
    )


def evaluate_all(
    ruleset: RuleSet,
    reqs: Requirements,
    *,
    model_sizes: Mapping[str, float] | None = None,
) -> dict[str, WorkloadRules]:
    """`evaluate_workload` for every workload, by name."""
    return {
        w.name: evaluate_workload(ruleset, w, reqs, model_sizes=model_sizes) for w in reqs.workloads
    }


@dataclass
class Removal:
    """Catalogue items one require-rule removes for one workload."""

    rule: str
    source: str
    title: str
    kind: str
    removed: list[str]
    errors: dict[str, str] = field(default_factory=dict)  # item id -> evaluation error


def catalogue_removals(
    wr: WorkloadRules, catalog: Catalog, cache: ActivationCache | None = None
) -> list[Removal]:
    """For each require-rule of a catalogue kind, the item ids it removes (deployment-level
    rules need layouts and are not checked here)."""
    cache = cache or ActivationCache(catalog.cards)
    out: list[Removal] = []
    for kind, attr in CATALOG_KINDS.items():
        items = list(getattr(catalog, attr).values())
        for pred in wr.requires.get(kind, []):
            removal = Removal(pred.rule, pred.source, pred.title, kind, [])
            for item in items:
                facts = _facts(cache, item)
                result = pred.program.evaluate(wr.bindings(facts))
                if result is True:
                    continue
                removal.removed.append(item.id)
                if isinstance(result, EvalFailure):
                    removal.errors[item.id] = f"{pred.where}: {result.message}"
            out.append(removal)
    return out


CatalogItem = Card | Server | ColoOffer | CloudOffer


def _facts(cache: ActivationCache, item: CatalogItem) -> Facts:
    if isinstance(item, Card):
        return cache.card(item)
    if isinstance(item, Server):
        return cache.server(item)
    if isinstance(item, ColoOffer):
        return cache.offer(item)
    return cache.cloud(item)


def allowed(
    wr: WorkloadRules, kind: str, items: Iterable[CatalogItem], cache: ActivationCache
) -> list[str]:
    """Ids of the catalogue items of `kind` that pass every require-rule."""
    return [item.id for item in items if not wr.check(kind, _facts(cache, item))]
