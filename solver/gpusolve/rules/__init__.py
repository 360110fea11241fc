"""The `rules` stage: declarative sizing heuristics (CEL) -> parameters, filters, advice.

Typical use by the planner::

    ruleset = load_ruleset(user_rule_paths)               # compile once (shipped + user)
    cache = ActivationCache(catalog.cards)                 # rule inputs per catalogue item
    for w in reqs.workloads:
        wr = evaluate_workload(ruleset, w, reqs, model_sizes=sizes)
        wr.params                                          # Params for the estimate stage
        wr.check("card", cache.card(card))                 # [] = allowed, else Violations;
        wr.check("server", cache.server(server))           # card rules apply to servers and
        wr.penalty("offer", cache.offer(offer))            # cloud offers built on the card
        facts = cache.deployment(layout, card=card, server=server)       # per layout
        wr.check("deployment", facts, site=False)          # rules that do not read `offer`
        wr.check("deployment", facts.with_part(cache.offer(o)), site=True)  # per site
        wr.advice, wr.trace, wr.fired

`gpusolve.rules.policy.evaluate_policies` wraps this behind the candidates stage's
`WorkloadPolicy` protocol and returns the plan's `RulesSummary` (`summary.py`).

The modules, bottom up:

- `declarations.py`: the declared types of the variables and fields expressions may use;
  `environment.py`: the values they see (`Facts`, `ActivationCache`).
- `cache.py`: cel-python's parser with Lark's table cache, and parsed trees kept on disk;
  `parse.py`: parsing with bounds and helpers on the tree.
- `scope.py` + `check.py`: the static checker (names, null narrowing, types).
- `operators.py`: CEL's mixed int/double comparisons and `== null` for cel-python;
  `bindings.py`: the variables an evaluation reads and `EvalFailure`;
  `direct.py`: simple terms directly; `evaluate.py`: memoised term-by-term evaluation.
- `compile.py`: parse + check + split into units; `templates.py`: advice messages;
  `compiled.py`: compiled expressions and their evaluations kept between runs;
  `celerror.py`: an expression's error, importable without the parser.
- `loader.py`: reading and merging rule files; `engine.py`: precedence and the trace;
  `policy.py`: the candidates stage's view; `placement.py`: the placement predicates that
  hold for any workload (`gpusolve colo`).
"""

from gpusolve.rules.bindings import EvalFailure
from gpusolve.rules.celerror import CelError
from gpusolve.rules.engine import (
    Removal,
    TraceEntry,
    Violation,
    WorkloadRules,
    allowed,
    catalogue_removals,
    evaluate_all,
    evaluate_workload,
    resolve_model_sizes,
)
from gpusolve.rules.environment import ActivationCache, Facts, deployment_facts
from gpusolve.rules.loader import (
    CompiledPredicate,
    CompiledRule,
    RuleSet,
    load_ruleset,
    read_rule_file,
    shipped_rule_files,
)

__all__ = [
    "ActivationCache",
    "CelError",
    "CompiledPredicate",
    "CompiledRule",
    "EvalFailure",
    "Facts",
    "Removal",
    "RuleSet",
    "TraceEntry",
    "Violation",
    "WorkloadRules",
    "allowed",
    "catalogue_removals",
    "deployment_facts",
    "evaluate_all",
    "evaluate_workload",
    "load_ruleset",
    "read_rule_file",
    "resolve_model_sizes",
    "shipped_rule_files",
]
