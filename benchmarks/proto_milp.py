"""A CP-SAT model that is a MILP, as a `peers.Milp` for HiGHS and CBC: the very same model.

The phased schedule (`gpusolve.optimize.phased`) is built with integer variables, linear
constraints and exactly-one choices only, so its `CpModelProto` is a MILP as it stands.
This reads the proto and writes each part as a MILP row, nothing re-derived:

* a variable's domain [lo, hi] (one interval; CP-SAT's +-2^62 and beyond are infinite);
* a `linear` constraint with one interval [lo, hi] as a row (two rows when both ends are
  finite, since CBC's translation takes one-sided rows);
* `exactly_one` / `at_most_one` / `bool_or` over literals, a negated literal ~x as 1 - x;
* an implication e -> l (a `bool_and` enforced by one literal) as l + (1 - e) >= 1;
* the objective's coefficients (its offset is added back when a solution is read; a
  scaling factor other than 1 is refused, the phased model never sets one).

Any other constraint kind, or an enforcement literal, is refused rather than approximated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from peers import INF, Milp

_BIG = 2**62
_KINDS = (
    "linear", "exactly_one", "at_most_one", "bool_or", "bool_and", "bool_xor", "lin_max",
    "int_prod", "int_div", "int_mod", "all_diff", "element", "table", "interval",
    "no_overlap", "no_overlap_2d", "cumulative", "circuit", "routes", "automaton",
    "inverse", "reservoir",
)  # fmt: skip


@dataclass(frozen=True)
class ProtoMilp:
    """What `peers.solve_highs`/`solve_cbc` read (`.milp`), and the objective's offset."""

    milp: Milp
    offset: int


def _bound(v: int) -> float:
    return -INF if v <= -_BIG else INF if v >= _BIG else v


def _literal(ref: int) -> tuple[int, int, int]:
    """(column, coefficient, constant) of a literal: x is (x, 1, 0), ~x is (x, -1, 1)."""
    return (ref, 1, 0) if ref >= 0 else (-ref - 1, -1, 1)


def _bool_row(m: Milp, refs: list[int], lo: float, hi: float) -> None:
    terms, constant = [], 0
    for ref in refs:
        j, a, c = _literal(ref)
        terms.append((j, a))
        constant += c
    _rows(m, terms, lo - constant, hi - constant)


def _rows(m: Milp, terms: list[tuple[int, int]], lo: float, hi: float) -> None:
    if lo == hi or lo == -INF or hi == INF:
        m.row(terms, lo, hi)
        return
    m.row(terms, lo, INF)
    m.row(terms, -INF, hi)


def _negate(ref: int) -> int:
    """CP-SAT's negated literal: ~x is -x - 1."""
    return -ref - 1


def _kind(c: Any) -> str | None:
    # OR-Tools 9.15's proto wrapper has has_<kind>() methods, not protobuf's WhichOneof.
    return next((k for k in _KINDS if getattr(c, f"has_{k}")()), None)


def from_proto(proto: Any) -> ProtoMilp:
    """`proto`: `CpModel.proto` (OR-Tools' wrapper of a CpModelProto)."""
    m = Milp()
    for i, var in enumerate(proto.variables):
        if len(var.domain) != 2:
            raise ValueError(f"variable {var.name or i}: a domain of holes is not a MILP column")
        lo, hi = var.domain
        m.col(var.name or f"v{i}", int(_bound(lo)), _bound(hi))
    for i, c in enumerate(proto.constraints):
        kind = _kind(c)
        if c.enforcement_literal and kind == "bool_and" and len(c.enforcement_literal) == 1:
            # An implication e -> l for each l: l - e >= 0, negations as 1 - x.
            (e,) = c.enforcement_literal
            for ref in c.bool_and.literals:
                _bool_row(m, [ref, _negate(e)], 1, INF)
            continue
        if c.enforcement_literal:
            raise ValueError(f"constraint {i}: enforcement literals are not translated")
        if kind == "linear":
            if len(c.linear.domain) != 2:
                raise ValueError(f"constraint {i}: a linear domain of holes")
            refs = list(c.linear.vars)
            if any(r < 0 for r in refs):
                raise ValueError(f"constraint {i}: a negated variable in a linear row")
            terms = list(zip(refs, c.linear.coeffs, strict=True))
            _rows(m, terms, _bound(c.linear.domain[0]), _bound(c.linear.domain[1]))
        elif kind == "exactly_one":
            _bool_row(m, list(c.exactly_one.literals), 1, 1)
        elif kind == "at_most_one":
            _bool_row(m, list(c.at_most_one.literals), -INF, 1)
        elif kind == "bool_or":
            _bool_row(m, list(c.bool_or.literals), 1, INF)
        else:
            raise ValueError(f"constraint {i}: {kind} is not a MILP row")
    obj = proto.objective
    if obj.scaling_factor not in (0, 1):
        raise ValueError("a scaled objective is not translated")
    for ref, coef in zip(obj.vars, obj.coeffs, strict=True):
        j, a, c = _literal(ref)
        m.add_cost(j, a * coef)
        if c:
            raise ValueError("a negated variable in the objective")
    return ProtoMilp(m, int(obj.offset))
