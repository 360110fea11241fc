"""`--why-not ID`: for each workload, why a card, server, colo or cloud offer was not chosen."""

from __future__ import annotations

from dataclasses import replace

from gpusolve.candidates.generate import Candidates, OptionMeta
from gpusolve.models.catalog import Catalog
from gpusolve.optimize import ir


def why_not(
    item: str,
    cand: Candidates,
    best: ir.Solution | None,
    catalog: Catalog,
    config: ir.SolveConfig,
) -> dict[str, list[str]]:
    """Rejection reasons involving `item`; with a plan, also the cost of forcing it in."""
    from gpusolve.optimize.solve import solve

    out: dict[str, list[str]] = {}
    for w in cand.instance.workloads:
        out[w] = [
            f"{r.candidate} rejected: {'; '.join(r.reasons[:2])}"
            for r in cand.rejections.get(w, [])
            if _involves(item, r.candidate, catalog)
        ]
    if best is None:
        return {w: lines or [f"no rejection of {item} recorded"] for w, lines in out.items()}
    chosen = {c.workload: c for c in best.choices}
    best_tco = best.costs.objective_tco if best.costs else 0
    for w in cand.instance.workloads:
        lines = out[w]
        c = chosen.get(w)
        if c is not None and _uses(item, cand.meta[c.option], c.site):
            lines.insert(0, f"{item} is in the chosen plan")
            out[w] = lines
            continue
        forced = _force(cand.instance, w, item, cand.meta)
        if forced is None:
            out[w] = lines or [f"no candidate for {w} uses {item}"]
            continue
        alt = solve(forced, config)
        if alt.costs is None or alt.status not in ("optimal", "feasible"):
            lines.append(f"{w} on {item} admits no plan with the other workloads' needs")
        else:
            delta = alt.costs.objective_tco - best_tco
            lines.append(f"feasible but dearer by {delta:,} over the horizon")
        out[w] = lines
    return out


def _involves(item: str, candidate: str, catalog: Catalog) -> bool:
    if candidate == item:
        return True
    server = catalog.servers.get(candidate)
    cloud = catalog.cloud_offers.get(candidate)
    return (server is not None and server.card == item) or (
        cloud is not None and cloud.card == item
    )


def _uses(item: str, meta: OptionMeta, site: str | None) -> bool:
    return item in (meta.card, meta.server, meta.cloud_offer, site)


def _force(
    instance: ir.Instance, workload: str, item: str, meta: dict[str, OptionMeta]
) -> ir.Instance | None:
    """The instance with `workload` restricted to options that use `item`."""
    owned: list[ir.OwnedOption] = []
    for o in instance.owned:
        if o.workload != workload:
            owned.append(o)
            continue
        m = meta[o.key]
        if item in (m.card, m.server):
            owned.append(o)
        else:
            places = tuple(p for p in o.placements if p.site == item)
            if places:
                owned.append(replace(o, placements=places))
    cloud = [
        o
        for o in instance.cloud
        if o.workload != workload or item in (meta[o.key].card, meta[o.key].cloud_offer)
    ]
    if not any(o.workload == workload for o in owned) and not any(
        o.workload == workload for o in cloud
    ):
        return None
    return replace(instance, owned=tuple(owned), cloud=tuple(cloud))
