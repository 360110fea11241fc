"""Rows that make the LP relaxation pay for a cluster network as a plan must.

A site's fabric (`fabric.py`) is a fixed charge: one switch for up to `radix` ports, a
tree of them beyond. The LP relaxation pays for switches only in proportion to its
fractional ports, and may serve a large job's ports with a fraction of the NIC-to-NIC
cable that holds two servers at most: at the market scale it placed three 14-server
pretrainings at two sites for about a third of one switch each, most of the gap between
its bound and the plan. So, per site, class and slot: the fabric costs at least a rate
per port (`port_rate`: the least of `least_cost(P) / P` over every size P the site could
need) times the ports of the jobs there on more than two servers, which no cable serves.
Implied by the model's own rows (the least cost only grows with the ports): no plan is
cut off. (A row per workload, its cheapest fabric x its choices, raised the same bound
no further and slowed the proofs of the generated M instances; it is not added.)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Protocol

from ortools.sat.python import cp_model

from gpusolve.optimize.ir import SLOTS_COVERED, FabricClass

SLOTS = ("day", "night")
# More servers than a direct cable joins: the least cost of a switched fabric.
SWITCHED_SERVERS = 3


class Need(Protocol):
    """What these rows read of one choice's job across servers (`fabric._Need`)."""

    @property
    def slot(self) -> str: ...

    @property
    def ports(self) -> int: ...

    @property
    def var(self) -> cp_model.IntVar: ...

    @property
    def servers(self) -> int: ...


def least_cost(fabric: FabricClass, ports: int, servers: int, nics: int) -> int:
    """The least a fabric of the class costs (switches, links, cables) serving `ports`
    ports of jobs on `servers` servers in all, `nics` NICs each: the cheapest of one
    switch, a small switch, the smallest two-tier tree (`fabric.needed`), and, for two
    servers or fewer where the class has a cable, the pair's cables."""
    options: list[int] = []
    if ports <= fabric.radix:
        options.append(fabric.switch_price + fabric.link_price * ports)
    options += [s.price + fabric.link_price * ports for s in fabric.small if ports <= s.radix]
    leaves = max(2, math.ceil(ports / fabric.down_ports))
    spines = math.ceil(fabric.up_ports * leaves / fabric.radix)
    links = ports + fabric.up_ports * leaves
    options.append(fabric.switch_price * (leaves + spines) + fabric.link_price * links)
    if fabric.direct_link is not None and servers <= 2:
        options.append(fabric.direct_link_price * nics)
    return min(options)


@functools.cache
def port_rate(fabric: FabricClass, most_ports: int) -> int:
    """Whole CNY per port a switched fabric of the class costs at least at any size up to
    `most_ports`: the least of `least_cost(P) // P`."""
    if most_ports <= 0:
        return 0
    return min(least_cost(fabric, p, SWITCHED_SERVERS, 0) // p for p in range(1, most_ports + 1))


def add_floors(
    model: cp_model.CpModel,
    fabric: FabricClass,
    cost: cp_model.LinearExpr,
    demand: Sequence[Need],
    most_ports: int,
) -> None:
    """The per-port rows (module docstring) for one site's fabric of one class whose cost
    is `cost`; `most_ports` bounds its ports."""
    rate = port_rate(fabric, most_ports)
    if rate <= 0:
        return
    for slot in SLOTS:
        row = [
            (n.var, n.ports)
            for n in demand
            if slot in SLOTS_COVERED[n.slot] and _switched(fabric, n.servers) and n.ports > 0
        ]
        if row:
            model.add(cost >= rate * _weighted(row))


def _switched(fabric: FabricClass, servers: int) -> bool:
    """Whether a job on `servers` servers needs a switch: no cable joins more than two."""
    return fabric.direct_link is None or servers > 2


def _weighted(terms: Sequence[tuple[cp_model.IntVar, int]]) -> cp_model.LinearExpr:
    return cp_model.LinearExpr.weighted_sum([v for v, _ in terms], [c for _, c in terms])
