"""The sites the core search's best plan uses plus the unused site whose opening bound is
least, searched alone before a core.

The LP's optimum splits jobs between options so that day and night workloads share
servers exactly; no whole plan can, and the plans nearest the LP often open a site the LP
leaves closed to make up for it. A core holds such plans, but CP-SAT finds them late: on
40x120x40 seed 5 the first core's plan (71.08 M) uses the LP's two sites, the best plan
found in 30 s (70.78 M) opens a third and moves thirteen workloads, and the second core
(3.2k choices, 20 s) found it 3-18 s in, and in 5 of 17 runs not at all (gap 1.29-1.33 %
instead of 0.90 %). The LP puts no cost on opening that site (`opening.py`: its bound is
0, against 66k-1.6 M for every other unused site), and the second core restricted to the
three sites and the cloud (1.3k choices) proved 70.78 M optimal in 2-4 s in four runs of
four; in the solve it takes 2.5-2.7 s, and the gap was 0.90 % in all 12 runs.
"""

from __future__ import annotations

from collections.abc import Mapping

from gpusolve.optimize.model import Built


def sites(
    built: Built, plan: Mapping[int, int], site_bounds: Mapping[str, float], slack: float
) -> frozenset[str] | None:
    """The sites `plan` (values by proto index) uses, plus the unused site with the least
    opening bound (`site_bounds`: rise over L, `opening.Opening.sites`) below `slack` (the
    plan's value minus L: a site at or above it cannot take part in a better plan). None
    when there is no such site."""
    used = {site for site, var in built.used.items() if plan.get(var.index) == 1}
    candidates = [(rise, site) for site, rise in site_bounds.items() if site not in used]
    cheapest = min(candidates, default=None)
    if cheapest is None or cheapest[0] >= slack:
        return None
    return frozenset(used | {cheapest[1]})


def elsewhere(built: Built, kept: frozenset[str]) -> frozenset[int]:
    """The choice variables (proto index) at every site outside `kept`."""
    return frozenset(o.var.index for o in built.owned if o.placement.site not in kept)
