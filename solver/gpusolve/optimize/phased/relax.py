"""Explain mode's hooks into the phased model (`phased.build_model`): each requirement's
constraint holds only while its literal `req:<name>` is true, so the model can name the
requirements that conflict (`phased_explain.py`). Normal mode (`lits` None) leaves the
model as it was."""

from __future__ import annotations

from typing import Any

from ortools.sat.python import cp_model

from gpusolve.optimize.ir import Instance, Site

Lits = dict[str, cp_model.IntVar]


def guard(c: cp_model.Constraint, lits: Lits | None, name: str) -> None:
    """Explain mode: the requirement's constraint holds only while its literal is true."""
    if lits is not None and name in lits:
        c.only_enforce_if(lits[name])


def rack_bound(instances: tuple[Instance, ...], site: Site, lits: Lits | None) -> int:
    """Racks a site may hold: what is available, or (its limit relaxed) one per server the
    periods' options could need, all bought apart, and the stock."""
    if lits is None or f"racks:{site.id}" not in lits:
        return site.racks_available
    stock = sum(s.count for s in instances[0].stock) if instances else 0
    need = stock + sum(
        max((o.servers for o in i.owned if o.workload == w), default=0)
        for i in instances
        for w in i.workloads
    )
    return max(site.racks_available, int(need))


def allowed(violates: frozenset[str], lits: Lits | None) -> bool:
    """Normal mode keeps what violates nothing; explain mode what violates only
    requirements it has literals for."""
    return not violates if lits is None else violates <= lits.keys()


def violating(
    m: cp_model.CpModel, x: cp_model.IntVar, names: frozenset[str], lits: Lits | None
) -> None:
    """Explain mode: choosing `x` switches off every requirement it violates."""
    for name in sorted(names):
        if lits is not None:
            m.add_implication(lits[name], ~x)


def early(
    m: cp_model.CpModel,
    works_from: tuple[int | None, ...],
    buy: dict[tuple[str, str, int], cp_model.IntVar],
    pair: tuple[str, str],
    p: int,
    lits: Lits | None,
    bound: int,
) -> Any:
    """Explain mode, the lead time relaxed: servers bought by period p that their lead time
    keeps from working in p work there all the same."""
    k, s = pair
    name = f"lead_time:{k}"
    if lits is None or name not in lits:
        return 0
    late = [
        v
        for (k2, s2, q), v in buy.items()
        if (k2, s2) == pair and q <= p and ((w := works_from[q]) is None or w > p)
    ]
    if not late:
        return 0
    early = m.new_int_var(0, bound, f"early[{k},{s},{p}]")
    m.add(early <= sum(late))
    m.add(early == 0).only_enforce_if(lits[name])
    return early
