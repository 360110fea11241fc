"""The sites the core search's best plan uses plus the unused site whose opening bound is
least, searched alone before a core.

Why: the LP's optimum splits jobs between options so that day and night workloads share
servers exactly; no whole plan can, and the plans nearest the LP often open a site the LP
leaves closed to make up for it. A core holds such plans, but CP-SAT finds them late, or
not at all within the limit; the same core restricted to those sites and the cloud proves
them in seconds (`benchmarks/README.md`).
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
