"""Turn an optimiser Solution plus candidate metadata into the typed Plan contract."""

from __future__ import annotations

import datetime
from collections import defaultdict
from typing import Any

from gpusolve.candidates.delivery import wait_for
from gpusolve.candidates.margin import against_target, margin_of
from gpusolve.candidates.records import Candidates, OptionMeta
from gpusolve.estimate.goodput import goodput_out
from gpusolve.explain import lines as itemise
from gpusolve.explain.compare import compare
from gpusolve.models.catalog import Catalog
from gpusolve.models.plan import (
    Alternative,
    Constraint,
    Cost,
    Deployment,
    Parallel,
    Pools,
    Site,
    SolverInfo,
)
from gpusolve.models.requirements import InferenceWorkload, Requirements, Workload
from gpusolve.optimize import ir


def deployments(
    solution: ir.Solution,
    cand: Candidates,
    reqs: Requirements,
) -> list[Deployment]:
    by_name = {w.name: w for w in reqs.workloads}
    out = []
    owned = {o.key: o for o in cand.instance.owned}
    for choice in solution.choices:
        meta = cand.meta[choice.option]
        d = _deployment(meta, choice.site, by_name[meta.workload].schedule)
        if d.goodput is not None:
            cost, basis = run_cost(meta, choice, cand.instance)
            d = d.model_copy(update={"run_cost": cost, "run_cost_basis": basis})
        w = by_name[meta.workload]
        d = _against(d, w, meta, reqs)
        d = d.model_copy(
            update={"delivery": _delivery(meta, choice, cand.instance, reqs.start_day)}
        )
        option = owned.get(choice.option)
        if option is None or option.burst is None:
            out.append(d)
            continue
        burst = cand.meta[option.burst.key]
        rented = _against(_deployment(burst, None, w.schedule), w, burst, reqs)
        base_says, burst_says = split_sentences(d, rented, option, reqs, w)
        out += [
            d.model_copy(update={"split": base_says}),
            rented.model_copy(update={"split": burst_says}),
        ]
    order = {name: i for i, name in enumerate(by_name)}
    return sorted(out, key=lambda d: order[d.workload])


def _against(d: Deployment, w: Workload, meta: OptionMeta, reqs: Requirements) -> Deployment:
    """`d` with its margin, target and spare: against its share of the workload's target
    where it carries a share (a split service)."""
    part = (
        w.model_copy(update=w.demand_scaled(meta.share))
        if isinstance(w, InferenceWorkload) and meta.share < 1
        else w
    )
    got = against_target(part, meta.estimate)
    spare = round(got.spare, 4) if got.spare is not None else None
    return d.model_copy(
        update={
            "margin": margin_of(w, reqs),
            "target": got.target,
            "target_unit": got.unit,
            "spare": spare,
            "share": meta.share,
        }
    )


def split_sentences(
    base: Deployment, burst: Deployment, option: ir.OwnedOption, reqs: Requirements, w: Workload
) -> tuple[str, str]:
    """What each part of a split workload is, in words: the owned base and the rented
    burst, their shares of the demand (of the runs), what the burst rents, and why."""
    assert option.burst is not None
    why = (
        "the cheapest way the plan found to meet it within its requirements"
        if reqs.objective == "min-tco"
        else f"the {reqs.objective} objective's choice over one platform alone"
    )
    rent = f"({option.burst.cost_total:,} {reqs.currency} over the horizon)"
    if isinstance(w, InferenceWorkload):
        base_part, burst_part = f"{base.share:.0%} of the demand", f"{burst.share:.0%}"
        lead, tail = "base load", "at base load"
    else:
        base_part = f"{w.runs * base.share:g} of its {w.runs:g} runs"
        burst_part = f"{w.runs * burst.share:g}"
        lead, tail = "base", "that run the others"
    base_says = (
        f"{lead}: {base.servers} owned server(s) carry {base_part}, {burst.servers} rented "
        f"instance(s) of {burst.cloud_offer} the other {burst_part} {rent}: {why}"
    )
    burst_says = (
        f"burst: {burst_part}{' of the demand' if isinstance(w, InferenceWorkload) else ' runs'}"
        f", beside {base.servers} owned {base.server} server(s) {tail}"
    )
    return base_says, burst_says


def _delivery(
    meta: OptionMeta, choice: ir.Choice, instance: ir.Instance, start: datetime.date | None
) -> str:
    """When owned servers with a lead time, or owned servers moved in, work, and what runs
    the workload until then."""
    option = next((o for o in instance.owned if o.key == choice.option), None)
    if meta.mode != "owned" or option is None:
        return ""
    if any(s.sku == meta.server for s in instance.stock):
        wait = wait_for(instance.stock, option, choice.site or "", meta.lead_time_weeks)
        weeks, when = wait.weeks, wait.says()
        bridged = any(p.bridge for p in option.placements if p.site == choice.site)
    else:
        weeks, when = meta.lead_time_weeks, f"{meta.lead_time_weeks:g} weeks after order"
        bridged = option.bridge > 0
    if weeks <= 0:
        return ""
    if start is not None:
        when = f"{start + datetime.timedelta(weeks=weeks):%Y-%m-%d}, {when}"
    if bridged:
        return f"{when}; its cheapest rental runs it until then"
    return f"{when}; no rental can run it meanwhile: it starts then"


def run_cost(
    meta: OptionMeta, choice: ir.Choice, instance: ir.Instance
) -> tuple[float | None, str]:
    """What one training run costs in the TCO line its hours drive, and that line in words.

    Only the lines that grow with the hours a run takes can say what goodput's lost hours
    cost: a rental (its amount over its hours of use, a monthly term included, pro rata), or
    on owned servers the energy drawn above idle (their capex, racks and idle power are paid
    whatever the run takes)."""
    est: Any = meta.estimate
    g = getattr(est, "goodput", None)
    if g is None or not g.finishes:
        return None, ""
    run_h = g.total_s / 3600
    cloud = next((o for o in instance.cloud if o.key == choice.option), None)
    if cloud is not None:
        if meta.rental_hours <= 0:
            return None, ""
        basis = _share(run_h, meta.rental_hours, "its cloud rental")
        return cloud.cost_total * run_h / meta.rental_hours, basis
    owned = next((o for o in instance.owned if o.key == choice.option), None)
    if owned is None or meta.busy_hours <= 0:
        return None, ""
    place = next((p for p in owned.placements if p.site == choice.site), None)
    energy = place.busy_energy if place is not None else 0
    basis = _share(run_h, meta.busy_hours, "its servers' energy above idle")
    basis += "; capex, racks and idle power are paid whatever a run takes"
    return energy * run_h / meta.busy_hours, basis


def _share(run_h: float, use_h: float, line: str) -> str:
    """One run's share of a line in words: '1/24 of its cloud rental'."""
    runs = use_h / run_h
    if abs(runs - round(runs)) < 0.01 * runs:
        n = round(runs)
        return line if n == 1 else f"1/{n:,} of {line}"
    return f"{line} x {run_h:,.2f} h / {use_h:,.1f} h of use"


def _deployment(meta: OptionMeta, site: str | None, schedule: str) -> Deployment:
    est: Any = meta.estimate
    layout = est.layout
    time_h = est.time_to_train_s / 3600 if est.time_to_train_s else None
    return Deployment(
        workload=meta.workload,
        mode="owned" if meta.mode == "owned" else "cloud",
        card=meta.card,
        server=meta.server,
        cloud_offer=meta.cloud_offer,
        servers=meta.nodes,
        gpus=est.gpus,
        parallel=Parallel(
            tp=layout.tp,
            pp=layout.pp,
            dp=layout.dp,
            vp=layout.vp,
            cp=layout.cp,
            ep=layout.ep,
            attention_dp=layout.attention_dp,
            sequence_parallel=layout.sequence_parallel_on,
            zero_stage=layout.zero_stage,
            gradient_checkpointing=layout.checkpointing,
            micro_batch=layout.micro_batch,
            grad_accum=layout.grad_accum,
        ),
        site=site,
        schedule=schedule,
        memory_per_gpu_gb=round(est.memory_total_bytes / 1e9, 2),
        memory_parts_gb={
            part: round(gb, 2) for part, gb in est.memory.as_gb().items() if part != "total"
        },
        card_memory_gb=round(est.card_memory_bytes / 1e9, 2),
        usable_memory_gb=round(est.usable_memory_bytes / 1e9, 2),
        headroom=est.headroom,  # the workload's parameters travel with its estimate
        time_to_train_h=round(time_h, 2) if time_h is not None else None,
        goodput=goodput_out(getattr(est, "goodput", None), est.gpus),
        mfu=round(est.mfu, 3) if est.mfu is not None else None,
        throughput=round(est.tokens_per_s, 1),
        replicas=layout.replicas,
        rental_hours=round(meta.rental_hours, 1),
        pools=_pools(est),
        serving=_serving_lines(est),
        calibration=list(getattr(est, "calibration", ())),
    )


def _pools(est: Any) -> Pools | None:
    serving = getattr(est, "serving", None)
    p = serving.disaggregated if serving is not None else None
    if p is None:
        return None
    return Pools(
        prefill_tp=p.prefill_tp,
        prefill_replicas=p.prefill_replicas,
        decode_tp=p.decode_tp,
        decode_replicas=p.decode_replicas,
        one_server=p.one_server,
        gpus_per_node=p.gpus_per_node,
        link=p.link,
        prefill_ep=p.prefill_ep,
        decode_ep=p.decode_ep,
        prefill_attention_dp=p.prefill_attention_dp,
        decode_attention_dp=p.decode_attention_dp,
    )


def _serving_lines(est: Any) -> list[str]:
    """The disaggregated pools and the aggregated/disaggregated comparison, if any."""
    serving = getattr(est, "serving", None)
    if serving is None:
        return []
    # The serving model's modules: only for a serving deployment.
    from gpusolve.estimate.disaggregation import describe
    from gpusolve.estimate.servingload import load_summary

    lines = [describe(serving.disaggregated)] if serving.disaggregated is not None else []
    if serving.load is not None:
        lines.append(load_summary(serving.load))
    return [*lines, serving.comparison] if serving.comparison else lines


def sites(solution: ir.Solution, instance: ir.Instance, catalog: Catalog) -> list[Site]:
    servers: dict[str, dict[str, int]] = defaultdict(dict)
    for (sku, site), count in solution.servers.items():
        if count > 0:
            servers[site][sku] = count
    fills: dict[str, list[dict[str, int]]] = defaultdict(list)
    for (site, pattern), racks in sorted(solution.racks.items()):
        for _ in range(racks):
            fills[site].append(dict(pattern))
    out = []
    for site_id in sorted(set(servers) | set(fills)):
        offer = catalog.colo_offers[site_id]
        power_kw = sum(catalog.servers[s].power_kw * n for s, n in servers[site_id].items())
        packed = instance.sites.get(site_id)
        reserved_kw = offer.rack_kw - packed.rack_w / 1000 if packed is not None else 0.0
        reserved_u = offer.rack_units - packed.rack_units if packed is not None else 0
        out.append(
            Site(
                offer=site_id,
                region=offer.region,
                city=offer.city,
                racks=len(fills[site_id]),
                servers=dict(sorted(servers[site_id].items())),
                power_kw=round(power_kw, 2),
                rack_kw=offer.rack_kw,
                cooling=offer.cooling,
                fill=fills[site_id],
                fill_kw=[
                    round(sum(catalog.servers[k].power_kw * n for k, n in fill.items()), 2)
                    for fill in fills[site_id]
                ],
                reserved_kw=round(reserved_kw, 3),
                reserved_units=reserved_u,
            )
        )
    return out


def cost(
    solution: ir.Solution, cand: Candidates, reqs: Requirements, catalog: Catalog
) -> Cost | None:
    """The plan's cost, itemised (`itemise.py`): TCO and soft-rule penalties apart."""
    return itemise.cost(solution, cand, reqs.currency, catalog)


def alternative(
    rank: int,
    found: ir.Solution,
    differs: str,
    cand: Candidates,
    reqs: Requirements,
    catalog: Catalog,
    chosen: tuple[Cost, list[Deployment]],
) -> Alternative:
    """A next-best plan with its own itemised cost and its deltas to the chosen plan."""
    alt_cost = cost(found, cand, reqs, catalog)
    alt_deps = deployments(found, cand, reqs)
    assert alt_cost is not None  # alternatives are plans
    compared = compare(reqs.objective, chosen[0], chosen[1], alt_cost, alt_deps)
    return Alternative(
        rank=rank,
        tco=alt_cost.tco,
        penalties=alt_cost.penalties,
        delta=compared.objective_value,
        differs=differs,
        deployments=alt_deps,
        cost=alt_cost,
        compared=compared,
    )


def binding(
    solution: ir.Solution, instance: ir.Instance, catalog: Catalog, reqs: Requirements
) -> list[Constraint]:
    """The constraints tight in the solution (`optimize/readout.py` decides which), each
    with the figures that show it: what the plan uses against the limit."""
    out = []
    for name in solution.binding:
        req = instance.requirements.get(name)
        detail, used, limit = _binding_detail(name, req, catalog, reqs, instance, solution)
        out.append(Constraint(name=name, detail=detail, used=used, limit=limit))
    return out


def budgets_not_binding(
    solution: ir.Solution, instance: ir.Instance, reqs: Requirements
) -> list[Constraint]:
    """Every budget cap the solution is not at, and what it spends under it: a cap with
    room for a further step binds nothing; a capex cap below the cheapest server keeps
    every purchase out (a plan without purchases is not at its cap either)."""
    costs = solution.costs
    if costs is None:
        return []
    cur = reqs.currency
    h = instance.horizon_months
    opex = costs.capped_opex
    total = costs.tco + costs.residual  # what is spent: credits are not cash
    cheapest = min((s.capex for s in instance.skus.values() if s.capex > 0), default=None)
    caps = [
        ("capex", "capex cap", reqs.budget.capex_max, costs.cash_capex, "capex"),
        ("monthly", "monthly cap", reqs.budget.monthly_max, opex / h, "monthly spend"),
        ("total", "total cap", reqs.budget.total_max, total, "capex + spend"),
    ]
    out = []
    for name, what, cap, used, spent in caps:
        if cap is None or name in solution.binding:
            continue
        if name == "capex" and used == 0 and cheapest is None:
            detail = (
                f"the {what} of {cap:,.0f} {cur} binds nothing: no allowed option buys "
                "servers (capex 0)"
            )
        elif name == "capex" and used == 0 and cheapest is not None and cheapest > cap:
            detail = (
                f"the {what} of {cap:,.0f} {cur} is below every server purchase among the "
                f"options (the cheapest costs {cheapest:,} {cur}): the plan buys none"
            )
        else:
            detail = f"the {what} of {cap:,.0f} {cur} binds nothing: {spent} is {used:,.0f} {cur}"
        out.append(Constraint(name=name, detail=detail, used=float(used), limit=float(cap)))
    return out


def _binding_detail(
    name: str,
    req: ir.Requirement | None,
    catalog: Catalog,
    reqs: Requirements,
    instance: ir.Instance,
    solution: ir.Solution,
) -> tuple[str, float | None, float | None]:
    kind, _, site = name.partition(":")
    offer = catalog.colo_offers.get(site)
    packed = instance.sites.get(site)
    cur = reqs.currency
    costs = solution.costs
    fills = [
        sum(instance.skus[k].power_w * n for k, n in fill)
        for (sid, fill), count in solution.racks.items()
        if sid == site and fill
        for _ in range(count)
    ]
    if kind == "rack_power" and offer is not None and packed is not None:
        return (
            f"rack power at {site}: its {len(fills)} racks of {offer.rack_kw:g} kW "
            f"({packed.rack_w / 1000:g} kW usable) hold the servers, and by space alone they "
            "would fit in fewer; a rack with room for another server lacks the power for it",
            max(fills, default=0) / 1000,
            packed.rack_w / 1000,
        )
    if kind == "rack_space" and offer is not None and packed is not None:
        return (
            f"rack space at {site}: its {len(fills)} racks of {offer.rack_units}U "
            f"({packed.rack_units}U usable) are full before their power is, and by power alone "
            "the servers would fit in fewer",
            None,
            float(packed.rack_units),
        )
    if kind == "racks" and offer is not None:
        used = sum(n for (sid, _), n in solution.racks.items() if sid == site)
        return (
            f"all {offer.racks_available} racks available at {site} are used",
            float(used),
            float(offer.racks_available),
        )
    opex = costs.capped_opex if costs is not None else 0
    h = instance.horizon_months
    if name == "capex" and reqs.budget.capex_max is not None and costs is not None:
        cap = reqs.budget.capex_max
        paid = costs.cash_capex
        financed = (
            f" (servers of {costs.financed:,} {cur} more are financed: the cap counts their "
            "down payments)"
            if costs.financed
            else ""
        )
        return (
            f"capex {paid:,} {cur} is at the cap of {cap:,.0f} {cur}{financed}: the "
            f"{cap - paid:,.0f} left buys no further server",
            float(paid),
            cap,
        )
    if name == "monthly" and reqs.budget.monthly_max is not None:
        cap = reqs.budget.monthly_max
        return (
            f"monthly spend {opex / h:,.0f} {cur} is at the cap of {cap:,.0f} {cur}: what is "
            "left pays for no further rack, server's energy, bandwidth or rental",
            opex / h,
            cap,
        )
    if name == "total" and reqs.budget.total_max is not None and costs is not None:
        cap = reqs.budget.total_max
        total = costs.tco + costs.residual
        return (
            f"capex + spend over the horizon {total:,} {cur} is at the total cap "
            f"of {cap:,.0f} {cur}",
            float(total),
            cap,
        )
    return (req.description if req else name), None, None


def solver_info(solution: ir.Solution, config: ir.SolveConfig) -> SolverInfo:
    gap = None
    if solution.objective_value is not None and solution.best_bound is not None:
        denom = max(1, abs(solution.objective_value))
        gap = round(abs(solution.objective_value - solution.best_bound) / denom, 6)
    return SolverInfo(
        status=solution.status,
        wall_s=round(solution.wall_s, 3),
        workers=config.workers,
        seed=config.seed,
        objective_value=float(solution.objective_value)
        if solution.objective_value is not None
        else None,
        best_bound=float(solution.best_bound) if solution.best_bound is not None else None,
        gap=gap,
        proven_optimal=solution.status == "optimal",
        fallback=solution.fallback,
    )
