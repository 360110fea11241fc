"""`--why-not ID`: for each workload, why a card, server, colo or cloud offer was not chosen."""

from __future__ import annotations

from dataclasses import replace

from gpusolve.candidates.generate import Candidates, OptionMeta
from gpusolve.explain import lines as itemise
from gpusolve.models.catalog import Catalog
from gpusolve.models.plan import WhyNot
from gpusolve.models.requirements import Requirements
from gpusolve.optimize import ir


def why_not(
    item: str,
    cand: Candidates,
    best: ir.Solution | None,
    catalog: Catalog,
    config: ir.SolveConfig,
    reqs: Requirements | None = None,
) -> dict[str, list[str]]:
    """Rejection reasons involving `item`; with a plan, also the cost of forcing it in."""
    return why_not_report(item, cand, best, catalog, config, reqs)[0]


def why_not_report(
    item: str,
    cand: Candidates,
    best: ir.Solution | None,
    catalog: Catalog,
    config: ir.SolveConfig,
    reqs: Requirements | None = None,
) -> tuple[dict[str, list[str]], list[WhyNot]]:
    """`why_not`, plus the itemised plan behind each comparison (with `reqs`): the line
    printed is `compared.summary` of the forced plan against the chosen one."""
    from gpusolve.optimize.solve import solve

    out = {w: rejection_lines(item, w, cand, catalog) for w in cand.instance.workloads}
    if best is None:
        return {w: found or [f"no rejection of {item} recorded"] for w, found in out.items()}, []
    chosen = {c.workload: c for c in best.choices}
    forced_plans: list[WhyNot] = []
    for w in cand.instance.workloads:
        lines = out[w]
        c = chosen.get(w)
        if c is not None and uses_item(item, cand.meta[c.option], c.site):
            lines.insert(0, f"{item} is in the chosen plan")
            out[w] = lines
            continue
        forced = forced_onto(cand.instance, w, item, cand.meta)
        if forced is None:
            out[w] = lines or [f"no candidate for {w} uses {item}"]
            continue
        alt = solve(forced, config)
        if alt.costs is None or alt.status not in ("optimal", "feasible"):
            lines.append(f"{w} on {item} admits no plan with the other workloads' needs")
        elif reqs is None:
            lines.append(f"feasible with {w} on {item}")
        else:
            report = compare_forced(w, item, cand, best, alt, reqs, catalog)
            forced_plans.append(report)
            lines.append(f"feasible with {w} on {item}: {report.compared.summary}")
        out[w] = lines
    return out, forced_plans


def compare_forced(
    workload: str,
    item: str,
    cand: Candidates,
    best: ir.Solution,
    alt: ir.Solution,
    reqs: Requirements,
    catalog: Catalog,
) -> WhyNot:
    from gpusolve.explain import parts as assemble

    best_cost = assemble.cost(best, cand, reqs, catalog)
    alt_cost = assemble.cost(alt, cand, reqs, catalog)
    assert best_cost is not None and alt_cost is not None  # both are plans
    best_deps = assemble.deployments(best, cand, reqs)
    alt_deps = assemble.deployments(alt, cand, reqs)
    compared = itemise.compare(reqs.objective, best_cost, best_deps, alt_cost, alt_deps)
    return WhyNot(
        workload=workload, item=item, deployments=alt_deps, cost=alt_cost, compared=compared
    )


def rejection_lines(item: str, workload: str, cand: Candidates, catalog: Catalog) -> list[str]:
    """Why each of `workload`'s candidates involving `item` was rejected (two reasons)."""
    return [
        f"{r.candidate} rejected: {'; '.join(r.reasons[:2])}"
        for r in cand.rejections.get(workload, [])
        if involves(item, r.candidate, catalog)
    ]


def involves(item: str, candidate: str, catalog: Catalog) -> bool:
    if candidate == item:
        return True
    server = catalog.servers.get(candidate)
    cloud = catalog.cloud_offers.get(candidate)
    return (server is not None and server.card == item) or (
        cloud is not None and cloud.card == item
    )


def uses_item(item: str, meta: OptionMeta, site: str | None) -> bool:
    return item in (meta.card, meta.server, meta.cloud_offer, site)


def forced_onto(
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
    scale = dict(throughput_scores_best(instance))
    return replace(instance, owned=tuple(owned), cloud=tuple(cloud), throughput_best=scale)


def throughput_scores_best(instance: ir.Instance) -> dict[str, int]:
    """Best throughput per workload over the whole instance: the forced instance scores
    max-throughput plans on the full instance's scale, so deltas compare like with like."""
    best: dict[str, int] = dict(instance.throughput_best)
    options: list[ir.OwnedOption | ir.CloudOption] = [*instance.owned, *instance.cloud]
    for o in options:
        best[o.workload] = max(best.get(o.workload, 0), o.throughput)
    return best
