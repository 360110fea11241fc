"""A CP-SAT model that is a MILP, as a `peers.Milp` for HiGHS and CBC: the very same model.

The translation is the planner's own (`gpusolve.optimize.milp.translate`, which the
schedule's HiGHS backend solves): this only copies its columns and rows into the peers'
`Milp`, so the peers solve exactly what the planner's backend solves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpusolve.optimize.milp.translate import translate
from peers import INF, Milp


@dataclass(frozen=True)
class ProtoMilp:
    """What `peers.solve_highs`/`solve_cbc` read (`.milp`), and the objective's offset."""

    milp: Milp
    offset: int


def _split(m: Milp, cols: list[int], coefs: list[int], lo: float, hi: float) -> None:
    # CBC's translation takes one-sided rows: a range is two.
    terms = list(zip(cols, coefs, strict=True))
    if lo == hi or lo == -INF or hi == INF:
        m.row(terms, lo, hi)
        return
    m.row(terms, lo, INF)
    m.row(terms, -INF, hi)


def from_proto(proto: Any) -> ProtoMilp:
    """`proto`: `CpModel.proto` (OR-Tools' wrapper of a CpModelProto)."""
    t = translate(proto)
    m = Milp()
    for i, (lo, hi, cost) in enumerate(zip(t.lower, t.upper, t.cost, strict=True)):
        name = proto.variables[i].name or f"v{i}"
        m.col(name, int(lo) if lo != -INF else -(2**62), hi, cost=cost)
    for cols, coefs, lo, hi in t.rows:
        _split(m, cols, coefs, lo, hi)
    return ProtoMilp(m, t.offset)
