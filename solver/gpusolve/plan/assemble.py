"""One finished Plan: a solution's parts in the Plan's words, then what every plan carries.

`planned` builds the Plan of a solution (single or one scenario of a two-stage plan):
its cost, deployments, sites and binding constraints (`explain/parts.py`), the advice
and warnings, the illustrative prices and the bill of materials. `finish` adds what every
plan of a run carries, a plan or not: the market, the compliance lines, the exclusions,
the sources, and the bill of materials' price locations.
"""

from __future__ import annotations

from gpusolve.candidates.market import compliance, exclusions
from gpusolve.candidates.prepare import Prepared
from gpusolve.errors import InputError
from gpusolve.explain import parts
from gpusolve.explain.bom import bill_of_materials, locate
from gpusolve.explain.inventory import in_service
from gpusolve.explain.inventory import inventory as owned_lines
from gpusolve.explain.leasing import financed_servers
from gpusolve.explain.payments import BASIS, contracted, payment_months
from gpusolve.load.catalog import sources_of
from gpusolve.models.catalog import PART_KINDS, Catalog
from gpusolve.models.common import PriceNote
from gpusolve.models.money import Cash, FinanceTerms
from gpusolve.models.plan import Plan, Scenarios, SolverInfo
from gpusolve.models.policy import WorkloadPolicy
from gpusolve.models.requirements import Requirements
from gpusolve.optimize import ir
from gpusolve.plan.inputs import Inputs

# H29: keep 20-30 % of each GPU's memory free; below the low end, out-of-memory under
# allocator fragmentation and several processes is likely (HEURISTICS.md H29).
H29_MIN_HEADROOM = 0.20


def planned(
    run: Inputs,
    where: Prepared,
    solution: ir.Solution,
    *,
    objective: str,
    solver: SolverInfo,
    scenarios: Scenarios | None = None,
) -> Plan:
    """The Plan of `solution`, found on `where`'s candidates (not yet `finish`ed)."""
    status = "optimal" if solution.status == "optimal" else "feasible"
    inst = where.cand.instance
    plan = Plan(
        status=status,
        objective=objective,
        cost=parts.cost(solution, where.cand, where.reqs, where.catalog),
        deployments=parts.deployments(solution, where.cand, where.reqs),
        sites=parts.sites(solution, inst, where.catalog),
        inventory=owned_lines(solution, inst, where.reqs),
        binding=parts.binding(solution, inst, where.catalog, where.reqs),
        budgets_not_binding=parts.budgets_not_binding(solution, inst, where.reqs),
        financed=financed_servers(solution, inst, terms_if(inst), where.reqs.currency),
        unmet_preferences=where.cand.unmet,
        margin_misses=where.cand.margin_misses,
        rules_fired=run.rules.fired,
        advice=[*where.small.values(), *run.rules.advice],
        solver=solver,
        scenarios=scenarios,
        warnings=headroom_warnings(run.reqs, run.policies),
    )
    return plan.model_copy(
        update={
            "illustrative_prices": illustrative_prices(plan, where.catalog),
            "bom": bill_of_materials(plan, where.catalog),
            "payments": payment_months(
                plan.cost, plan.deployments, runs_of(where.reqs), contracted(plan), plan.financed
            ),
            "payments_basis": BASIS if plan.cost is not None else "",
            "cash": cash_of(plan, where.reqs, where.catalog),
        }
    )


def terms_if(instance: ir.Instance) -> FinanceTerms | None:
    """The finance terms when the plan may finance servers (their sources), else None."""
    if not instance.financing:
        return None
    from gpusolve.load.finance import load_terms

    return load_terms()


def cash_of(plan: Plan, reqs: Requirements, catalog: Catalog) -> Cash | None:
    """The plan's cash view on the shipped finance terms and the requirements' choices."""
    from gpusolve.explain.financing import cash_view
    from gpusolve.load.finance import load_terms

    f = reqs.finance
    terms = load_terms()
    if f.payment_channel is not None and f.payment_channel not in terms.payment_terms:
        raise InputError.single(
            "requirements: finance.payment_channel",
            f"no payment terms {f.payment_channel!r} in catalog/finance/terms.yaml",
            hint=f"one of {', '.join(sorted(terms.payment_terms))}",
        )
    lead = {k: s.lead_time_weeks for k, s in catalog.servers.items()}
    return cash_view(
        plan,
        terms,
        lead,
        runs_of(reqs),
        contracted(plan),
        how=f.financing,
        channel=f.payment_channel,
        discount_rate=f.discount_rate,
    )


def runs_of(reqs: Requirements) -> dict[str, float]:
    """Runs over the horizon per workload: when its rentals are paid (explain/payments.py)."""
    return {w.name: w.runs for w in reqs.workloads}


def finish(run: Inputs, plan: Plan) -> Plan:
    """The plan with its market, compliance lines, exclusions and sources filled in, and
    each bill-of-materials line's price located in its source."""
    update: dict[str, object] = {}
    if run.market is not None:
        update["market"] = run.market.market
        update["market_basis"] = run.market.basis
        update["compliance"] = compliance(
            plan.deployments, run.catalog, run.market, in_service(plan)
        )
        update["excluded"] = exclusions(run.catalog, run.market)
    if run.loaded is not None:
        used = [
            i for d in plan.deployments for i in (d.card, d.server, d.cloud_offer) if i is not None
        ]
        used += [s.offer for s in plan.sites]
        # The switches, links, NICs and storage nodes bought (ids the catalogue lacks,
        # such as a NIC inside its server's price, are skipped by `sources_of`).
        if plan.cost is not None:
            items = plan.cost.breakdown.items
            used += [i.subject for i in items if i.kind in ("network", "storage")]
            # A rental until delivery names the offer it is priced at.
            used += [i.subject for i in items if i.kind == "cloud_rental"]
        update["sources"] = sources_of(run.loaded, used)
    plan = plan.model_copy(update=update)
    return plan.model_copy(update={"bom": locate(plan.bom, plan.sources)})


def solver_info(solution: ir.Solution, config: ir.SolveConfig, timings: bool) -> SolverInfo:
    """The solve as the plan reports it; its wall time only with `timings` (the same
    input gives the same output)."""
    info = parts.solver_info(solution, config)
    return info if timings else info.model_copy(update={"wall_s": None})


def no_plan_info(config: ir.SolveConfig, status: str) -> SolverInfo:
    """The solver facts of an outcome without a plan (infeasible, out of time, stopped)."""
    return SolverInfo(status=status, workers=config.workers, seed=config.seed)


def headroom_warnings(reqs: Requirements, policies: dict[str, WorkloadPolicy]) -> list[str]:
    """One warning per workload whose memory headroom is below H29's 20 %, saying who set it."""
    out: list[str] = []
    for w in reqs.workloads:
        policy = policies.get(w.name)
        if policy is None or policy.params.headroom >= H29_MIN_HEADROOM:
            continue
        origin = policy.param_origin("headroom")
        by = (
            "the workload's policy"
            if origin is None
            else "the requirements' `headroom:`"
            if origin == "user"
            else f"rule {origin}"
        )
        out.append(
            f"{w.name}: memory headroom {policy.params.headroom:.0%} (set by {by}) is below "
            f"H29's {H29_MIN_HEADROOM:.0%}: allocator fragmentation or a second process can "
            "run the GPUs out of memory; keep 20-30% unless this layout was measured"
        )
    return out


def illustrative_prices(plan: Plan, catalog: Catalog) -> list[str]:
    """The catalogue items the plan pays for whose price is illustrative, not a quote."""
    used: list[tuple[str, PriceNote | None]] = []
    for d in plan.deployments:
        if d.server is not None:
            server = catalog.servers.get(d.server)
            used.append((f"server {d.server}", server.pricing if server else None))
        if d.cloud_offer is not None:
            cloud = catalog.cloud_offers.get(d.cloud_offer)
            used.append((f"cloud {d.cloud_offer}", cloud.pricing if cloud else None))
    for s in plan.sites:
        colo = catalog.colo_offers.get(s.offer)
        used.append((f"colo {s.offer}", colo.pricing if colo else None))
    bought = plan.cost.breakdown.items if plan.cost is not None else []
    for line in bought:
        if line.kind in ("network", "storage") and line.amount:
            used.append((f"{line.kind} {line.subject}", _network_pricing(catalog, line.subject)))
    return [
        f"{what} (as of {note.as_of}; {note.source})"
        for what, note in dict(used).items()
        if note is not None and note.illustrative
    ]


def _network_pricing(catalog: Catalog, item_id: str) -> PriceNote | None:
    """The price note of a switch, link, NIC or storage node (None: not a catalogue item,
    such as NICs inside a server's price)."""
    for kind in PART_KINDS:
        item = getattr(catalog, kind).get(item_id)
        if item is not None:
            note: PriceNote = item.pricing
            return note
    return None
