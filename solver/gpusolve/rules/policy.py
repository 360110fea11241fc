"""The rules stage as the candidates stage sees it (`gpusolve.models.policy`).

`evaluate_policies(reqs, catalog, rules_paths)` loads and compiles the rules once,
evaluates them for every workload and returns one `RulesPolicy` per workload (the
`WorkloadPolicy` protocol) plus the summary the plan reports (rules fired, advice).

How `failed`/`penalty` read their arguments (`kind`, `subject`, `context`):

| kind         | subject                | context keys used                                      |
|--------------|------------------------|--------------------------------------------------------|
| `card`       | `Card`                 | -                                                      |
| `server`     | `Server`               | -                                                      |
| `cloud`      | `CloudOffer`           | -                                                      |
| `deployment` | layout dict            | `card`, `server` or `cloud` (else derived/none)        |
| `offer`      | `ColoOffer`            | `deployment` (dict), `server`, `card` — optional       |

Deployment rules that read `offer` (rack power, cooling, fabric at the site...) are
checked with the `offer` call, once per layout and site, when the context carries the
`deployment`; the others with the `deployment` call, once per layout. A rule is thus
counted once per placement, never twice. Without `server`/`cloud` in the context of a
deployment call those variables are null (rules guarded with `server == null || ...`
pass) and `deployment.mode` is "owned" unless the dict says `mode`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gpusolve.models.catalog import Card, Catalog, CloudOffer, ColoOffer, Server
from gpusolve.models.params import Params
from gpusolve.models.plan import RuleFired
from gpusolve.models.policy import Penalty, RuleHit, WorkloadPolicy
from gpusolve.models.requirements import Requirements
from gpusolve.rules.engine import Violation, WorkloadRules, evaluate_workload
from gpusolve.rules.environment import ActivationCache, Facts, estimate_params_b
from gpusolve.rules.loader import CompiledPredicate, RuleSet, load_ruleset
from gpusolve.rules.summary import RulesSummary


def model_sizes(reqs: Requirements) -> dict[str, float]:
    """Parameters (billions) per workload, presets resolved by the estimate stage."""
    sizes: dict[str, float] = {}
    for w in reqs.workloads:
        size = estimate_params_b(w.model) if w.model.preset is None else None
        if size is None:
            try:
                from gpusolve.estimate import resolve_arch

                size = resolve_arch(w.model).params / 1e9
            except (ImportError, ValueError):
                size = estimate_params_b(w.model)
        if size is not None:
            sizes[w.name] = size
    return sizes


# Layout facts kept per workload. The candidates stage asks about one layout dict for its
# deployment rules and then at every site it is placed at, all before it sizes the next
# candidate, and never again: a dict is built per layout and dropped once its options are
# built. Keeping more only holds memory (at sixteen times the shipped catalogue and fifty
# workloads, 134,661 facts with their layouts and converted values stayed alive until the
# plan was done); a layout asked about after it was dropped is converted again, same answer.
LAYOUT_FACTS_KEPT = 256


class RulesPolicy:
    """One workload's rule outcomes behind the candidates stage's `WorkloadPolicy`."""

    def __init__(self, rules: WorkloadRules, cache: ActivationCache, catalog: Catalog) -> None:
        self.rules = rules
        self._cache = cache
        self._catalog = catalog
        self._layouts: dict[tuple[int, ...], tuple[Any, Facts]] = {}
        self._has_deployment_rules = bool(
            rules.requires.get("deployment") or rules.prefers.get("deployment")
        )

    @property
    def params(self) -> Params:
        return self.rules.params

    def failed(self, kind: str, subject: Any, context: dict[str, Any]) -> list[RuleHit]:
        return [_hit(v) for v in self._violations(kind, subject, context)]

    def param_origin(self, name: str) -> str | None:
        return self.rules.param_origin.get(name, "default")

    def penalty(self, kind: str, subject: Any, context: dict[str, Any]) -> Penalty:
        total = 0.0
        hits: list[RuleHit] = []
        amounts: list[float] = []
        shares: list[float] = []
        kinds: list[str] = []
        for k, facts, site in self._subjects(kind, subject, context):
            money, rule_ids = self.rules.penalty(k, facts, site=site)
            total += money
            hits += [self._rule_hit(r) for r in rule_ids]
            for r in rule_ids:
                pred = self._prefer(k, r)
                amounts.append((pred.penalty or 0.0) if pred is not None else 0.0)
                shares.append((pred.share or 0.0) if pred is not None else 0.0)
            kinds += [k] * len(rule_ids)
        return Penalty(total, tuple(hits), tuple(amounts), kinds=tuple(kinds), shares=tuple(shares))

    # ------------------------------------------------------------------ internals
    def _violations(self, kind: str, subject: Any, context: dict[str, Any]) -> list[Violation]:
        out: list[Violation] = []
        for k, facts, site in self._subjects(kind, subject, context):
            out += self.rules.check(k, facts, site=site)
        return out

    def _subjects(
        self, kind: str, subject: Any, context: Mapping[str, Any]
    ) -> list[tuple[str, Facts, bool | None]]:
        if kind == "card":
            return [("card", self._cache.card(subject), None)]
        if kind == "server":
            return [("server", self._cache.server(subject), None)]
        if kind == "cloud":
            return [("cloud", self._cache.cloud(subject), None)]
        if kind == "offer":
            subjects: list[tuple[str, Facts, bool | None]] = [
                ("offer", self._cache.offer(subject), None)
            ]
            layout = context.get("deployment")
            if isinstance(layout, Mapping) and self._has_deployment_rules:
                facts = self._deployment(layout, context, offer=subject)
                subjects.append(("deployment", facts, True))
            return subjects
        if kind == "deployment":
            return [("deployment", self._deployment(subject, context, offer=None), False)]
        raise ValueError(f"unknown rule kind {kind!r}")

    def _deployment(
        self, layout: Mapping[str, Any], context: Mapping[str, Any], offer: ColoOffer | None
    ) -> Facts:
        """Facts for a layout (cached per layout dict and context), placed at `offer`."""
        server = context.get("server")
        cloud = context.get("cloud")
        card = context.get("card")
        key = (id(layout), id(server), id(cloud), id(card))
        cached = self._layouts.get(key)
        if cached is None:
            if card is None:
                card_id = getattr(server, "card", None) or getattr(cloud, "card", None)
                card = self._catalog.cards.get(card_id) if card_id else None
            facts = self._cache.deployment(
                layout,
                card=card if isinstance(card, Card) else None,
                server=server if isinstance(server, Server) else None,
                cloud=cloud if isinstance(cloud, CloudOffer) else None,
            )
            if len(self._layouts) >= LAYOUT_FACTS_KEPT:
                self._layouts.clear()
            # The tuple keeps the objects alive, so their ids cannot be reused meanwhile.
            cached = self._layouts[key] = ((layout, server, cloud, card), facts)
        base = cached[1]
        return base if offer is None else base.with_part(self._cache.offer(offer))

    def _prefer(self, kind: str, rule_id: str) -> CompiledPredicate | None:
        """Rule `rule_id`'s `prefer` of this kind (one per rule and kind)."""
        for p in self.rules.prefers.get(kind, []):
            if p.rule == rule_id:
                return p
        return None

    def _rule_hit(self, rule_id: str) -> RuleHit:
        for preds in self.rules.prefers.values():
            for p in preds:
                if p.rule == rule_id:
                    return RuleHit(p.rule, p.source, p.title, p.reason or "")
        return RuleHit(rule_id, "", "")


def _hit(v: Violation) -> RuleHit:
    detail = f"could not be evaluated: {v.detail}" if v.detail else ""
    return RuleHit(v.rule, v.source, v.title, detail)


def evaluate_policies(
    reqs: Requirements,
    catalog: Catalog,
    rules_paths: Sequence[Path] = (),
    *,
    ruleset: RuleSet | None = None,
    sizes: Mapping[str, float] | None = None,
) -> tuple[dict[str, WorkloadPolicy], RulesSummary]:
    """Compile the rules (shipped + `rules_paths`) and evaluate them for every workload."""
    ruleset = ruleset or load_ruleset(list(rules_paths))
    sizes = dict(sizes) if sizes is not None else model_sizes(reqs)
    cache = ActivationCache(catalog.cards)
    policies: dict[str, WorkloadPolicy] = {}
    fired: dict[str, RuleFired] = {}
    advice: dict[str, list[str]] = {}
    for w in reqs.workloads:
        wr = evaluate_workload(ruleset, w, reqs, model_sizes=sizes)
        policies[w.name] = RulesPolicy(wr, cache, catalog)
        for entry in wr.trace:
            if not entry.fired or entry.rule == "user":
                continue
            if entry.rule in fired:
                fired[entry.rule].workloads.append(w.name)
            else:
                fired[entry.rule] = RuleFired(
                    rule=entry.rule, source=entry.source, title=entry.title, workloads=[w.name]
                )
            if entry.advice:
                text = f"{entry.advice} ({entry.source}, {entry.rule})"
                advice.setdefault(text, []).append(w.name)
    lines = [f"{', '.join(names)}: {text}" for text, names in advice.items()]
    return policies, RulesSummary(fired=list(fired.values()), advice=lines)
