"""Explain mode's hooks into the phased model (`phased.build_model`): each requirement's
constraint holds only while its literal `req:<name>` is true, so the model can name the
requirements that conflict (`phased_explain.py`). Normal mode (`lits` None) leaves the
model as it was."""

from __future__ import annotations

from typing import Any

from ortools.sat.python import cp_model

Lits = dict[str, cp_model.IntVar]


def guard(c: cp_model.Constraint, lits: Lits | None, name: str) -> None:
    """Explain mode: the requirement's constraint holds only while its literal is true."""
    if lits is not None and name in lits:
        c.only_enforce_if(lits[name])


def allowed(violates: frozenset[str], lits: Lits | None) -> bool:
    """Normal mode keeps what violates nothing; explain mode what violates only
    requirements it has literals for."""
    return not violates if lits is None else violates <= lits.keys()


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
