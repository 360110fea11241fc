"""A CP-SAT model that is a MILP, read from its own proto as MILP columns and rows.

The schedule's model (`optimize/phased/model.py`) is built from integer variables, linear
rows, exactly-one choices and implications, so its `CpModelProto` is a MILP as it stands.
Nothing is re-derived from the builders: each proto part becomes rows, and anything that
is not a MILP row is refused (`NotMilp`) rather than approximated, so the caller solves
that model with CP-SAT instead.

* a variable's domain [lo, hi] is its column's bounds (CP-SAT's +-2^62 and beyond are
  infinite); a domain with holes is refused;
* a `linear` constraint with one interval is a row; enforced by literals e1..ek it is a
  big-M row whose M comes from the variables' own bounds (refused where one is infinite);
* `exactly_one`, `at_most_one`, `bool_or` over literals, a negated literal ~x as 1 - x;
* `bool_and` enforced by e1..ek: each literal l as l >= e1 + ... + ek - (k - 1);
* the objective's integer coefficients and offset (a scaled objective is refused), and its
  domain as a row where it has one.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

INF = math.inf
_BIG = 2**62
# OR-Tools 9.15's proto wrapper has has_<kind>() methods, not protobuf's WhichOneof.
_KINDS = (
    "linear", "exactly_one", "at_most_one", "bool_or", "bool_and", "bool_xor", "lin_max",
    "int_prod", "int_div", "int_mod", "all_diff", "element", "table", "interval",
    "no_overlap", "no_overlap_2d", "cumulative", "circuit", "routes", "automaton",
    "inverse", "reservoir",
)  # fmt: skip

Terms = list[tuple[int, int]]


class NotMilp(ValueError):
    """The model holds a part that is not a MILP row (named in the message)."""


@dataclass
class Milp:
    """A minimisation MILP over integer columns (one per CP-SAT variable, same index),
    rows as sparse (columns, coefficients, lower, upper), objective = cost . x + offset."""

    lower: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)
    cost: list[int] = field(default_factory=list)
    offset: int = 0
    rows: list[tuple[list[int], list[int], float, float]] = field(default_factory=list)

    def row(self, terms: Iterable[tuple[int, int]], lo: float, hi: float) -> None:
        merged: dict[int, int] = defaultdict(int)
        for j, a in terms:
            merged[j] += a
        kept = [(j, a) for j, a in merged.items() if a != 0]
        self.rows.append(([j for j, _ in kept], [a for _, a in kept], lo, hi))

    def objective(self, values: Sequence[int]) -> int:
        return self.offset + sum(c * v for c, v in zip(self.cost, values, strict=True))


def _bound(v: int) -> float:
    return -INF if v <= -_BIG else INF if v >= _BIG else v


def _literal(ref: int) -> tuple[int, int, int]:
    """(column, coefficient, constant) of a literal: x is (x, 1, 0), ~x is (x, -1, 1)."""
    return (ref, 1, 0) if ref >= 0 else (-ref - 1, -1, 1)


def _literals(refs: Iterable[int]) -> tuple[Terms, int]:
    """The sum of literals as (terms, constant)."""
    terms: Terms = []
    constant = 0
    for ref in refs:
        j, a, c = _literal(ref)
        terms.append((j, a))
        constant += c
    return terms, constant


def _kind(c: Any) -> str | None:
    return next((k for k in _KINDS if getattr(c, f"has_{k}")()), None)


def _linear_terms(c: Any, i: int) -> Terms:
    refs = list(c.linear.vars)
    terms: Terms = []
    for ref, a in zip(refs, c.linear.coeffs, strict=True):
        j, sign, constant = _literal(ref)
        if constant:
            raise NotMilp(f"constraint {i}: a negated variable in a linear row")
        terms.append((j, sign * a))
    return terms


def _extent(m: Milp, terms: Terms) -> tuple[float, float]:
    """The least and the most `terms` can sum to within the columns' bounds."""
    low = sum(a * (m.lower[j] if a > 0 else m.upper[j]) for j, a in terms)
    high = sum(a * (m.upper[j] if a > 0 else m.lower[j]) for j, a in terms)
    return low, high


def _enforced_rows(
    m: Milp, terms: Terms, lo: float, hi: float, enforce: Sequence[int], i: int
) -> None:
    """lo <= terms <= hi when every enforcement literal is true: each side relaxed by M
    times the number of false literals, M the distance to the side's extent."""
    low, high = _extent(m, terms)
    e_terms, e_const = _literals(enforce)
    k = len(enforce)
    if hi < high:
        if high == INF:
            raise NotMilp(f"constraint {i}: an enforced row over an unbounded variable")
        big = high - hi  # terms + big * (sum e) <= hi + big * k
        scaled = [(j, int(big) * a) for j, a in e_terms]
        m.row(terms + scaled, -INF, hi + big * (k - e_const))
    if lo > low:
        if low == -INF:
            raise NotMilp(f"constraint {i}: an enforced row over an unbounded variable")
        big = lo - low  # terms - big * (sum e) >= lo - big * k
        scaled = [(j, -int(big) * a) for j, a in e_terms]
        m.row(terms + scaled, lo - big * (k - e_const), INF)


def _linear(m: Milp, c: Any, i: int) -> None:
    domain = list(c.linear.domain)
    if len(domain) != 2:
        raise NotMilp(f"constraint {i}: a linear domain with holes")
    terms = _linear_terms(c, i)
    lo, hi = _bound(domain[0]), _bound(domain[1])
    if c.enforcement_literal:
        _enforced_rows(m, terms, lo, hi, list(c.enforcement_literal), i)
    else:
        m.row(terms, lo, hi)


def _bool_and(m: Milp, c: Any) -> None:
    enforce = list(c.enforcement_literal)
    e_terms, e_const = _literals(enforce)
    k = len(enforce)
    for ref in c.bool_and.literals:
        j, a, constant = _literal(ref)
        # l >= sum(e) - (k - 1), with l = a x + constant and sum(e) = e_terms + e_const
        negated = [(col, -coef) for col, coef in e_terms]
        m.row([(j, a), *negated], e_const - (k - 1) - constant, INF)


def _boolean_row(m: Milp, refs: Sequence[int], lo: float, hi: float) -> None:
    terms, constant = _literals(refs)
    m.row(terms, lo - constant, hi - constant)


def _constraint(m: Milp, c: Any, i: int) -> None:
    kind = _kind(c)
    if kind == "linear":
        _linear(m, c, i)
    elif kind == "bool_and":
        _bool_and(m, c)
    elif c.enforcement_literal:
        raise NotMilp(f"constraint {i}: an enforced {kind}")
    elif kind == "exactly_one":
        _boolean_row(m, list(c.exactly_one.literals), 1, 1)
    elif kind == "at_most_one":
        _boolean_row(m, list(c.at_most_one.literals), -INF, 1)
    elif kind == "bool_or":
        _boolean_row(m, list(c.bool_or.literals), 1, INF)
    elif kind is not None:
        raise NotMilp(f"constraint {i}: {kind} is not a MILP row")


def _objective(m: Milp, proto: Any) -> None:
    obj = proto.objective
    if obj.scaling_factor not in (0, 1) or proto.has_floating_point_objective():
        raise NotMilp("a scaled or floating-point objective")
    terms: Terms = []
    for ref, coef in zip(obj.vars, obj.coeffs, strict=True):
        j, a, constant = _literal(ref)
        m.cost[j] += a * coef
        m.offset += constant * coef
        terms.append((j, a * coef))
    m.offset += int(obj.offset)
    domain = list(obj.domain)
    if len(domain) > 2:
        raise NotMilp("an objective domain with holes")
    if domain:
        # The domain bounds the objective's variable part (CP-SAT's convention).
        m.row(terms, _bound(domain[0]), _bound(domain[1]))


def translate(proto: Any) -> Milp:
    """The MILP of `proto` (`CpModel.proto`); `NotMilp` for any part that is not a row."""
    m = Milp()
    for i, var in enumerate(proto.variables):
        domain = list(var.domain)
        if len(domain) != 2:
            raise NotMilp(f"variable {var.name or i}: a domain with holes")
        m.lower.append(_bound(domain[0]))
        m.upper.append(_bound(domain[1]))
        m.cost.append(0)
    for i, c in enumerate(proto.constraints):
        _constraint(m, c, i)
    _objective(m, proto)
    return m
