"""The vocabulary every part of the model is built with: options, the builder that holds
the model while constraint families are added, the choice variables, integer sums."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ortools.sat.python import cp_model

from gpusolve.optimize.ir import CloudOption, Instance, OwnedOption, Placement

Mode = Literal["normal", "explain"]
Var = cp_model.IntVar
Expr = cp_model.LinearExpr


@dataclass(frozen=True)
class BuildOptions:
    """How to build: normal (requirements hard) or explain (requirements as literals).

    `relax` names requirements left out entirely in a normal build (used to measure how far
    one requirement must move); `pattern_limit` is the per-site column budget before the
    site falls back to per-rack variables, `large_pattern_limit` the budget from
    `large_choices` choice variables up.
    """

    mode: Mode = "normal"
    relax: frozenset[str] = frozenset()
    pattern_limit: int = 2000
    # Smaller on the largest models, whose time goes to the core search (benchmarks/README.md,
    # "Why the model is built as it is").
    large_pattern_limit: int = 1000
    large_choices: int = 50_000
    prune_dominated: bool = True
    # Also drop SKUs and rentals another beats on every count (`dominance.py`); off for
    # top-k lists, where a plan on a dearer copy is still a distinct plan.
    prune_across: bool = True
    fallback: Literal["lazy", "bins"] = "lazy"  # explain mode always uses "bins"


@dataclass(frozen=True)
class OwnedVar:
    option: OwnedOption
    placement: Placement
    var: Var
    rank: int  # position among this workload's choices, for the deterministic tie-break


@dataclass(frozen=True)
class CloudVar:
    option: CloudOption
    var: Var
    rank: int


class Builder:
    """Holds the model while the constraint families are added one by one."""

    def __init__(
        self, instance: Instance, options: BuildOptions, model: cp_model.CpModel | None = None
    ) -> None:
        """A builder over `model` (a new one by default: the two-stage model's scenarios
        share one, and a CpModel costs milliseconds to construct)."""
        self.instance = instance
        self.options = options
        self.mode = options.mode
        self.relax = options.relax if options.mode == "normal" else frozenset()
        self.model = cp_model.CpModel() if model is None else model
        self.literals: dict[str, Var] = {}

    # A requirement's constraints carry `req:<name>` in explain mode, are hard in normal
    # mode, and vanish when the requirement is relaxed.
    def enforced(self, name: str) -> bool:
        return name not in self.relax

    def literal(self, name: str) -> Var | None:
        if self.mode == "normal":
            return None
        lit = self.literals.get(name)
        if lit is None:
            lit = self.model.new_bool_var(f"req:{name}")
            self.literals[name] = lit
        return lit

    def guard(self, constraint: cp_model.Constraint, name: str) -> None:
        lit = self.literal(name)
        if lit is not None:
            constraint.only_enforce_if(lit)


def wsum(terms: Sequence[tuple[int, Var]]) -> Expr:
    """Integer weighted sum; drops zero coefficients so the proto stays small."""
    kept = [(c, v) for c, v in terms if c != 0]
    return cp_model.LinearExpr.weighted_sum([v for _, v in kept], [c for c, _ in kept])


def wsum_expr(terms: Sequence[tuple[int, Expr]]) -> Expr:
    total: Expr = cp_model.LinearExpr.weighted_sum([], [])
    for coef, expr in terms:
        if coef:
            total = total + coef * expr
    return total


def option_sum(
    owned: Sequence[OwnedVar],
    cloud: Sequence[CloudVar],
    coef: Callable[[OwnedOption | CloudOption], int],
) -> Expr:
    """Sum over every choice of `coef(its option)` times its Bool (scores, headroom)."""
    return wsum([(coef(o.option), o.var) for o in owned] + [(coef(c.option), c.var) for c in cloud])
