"""What a plan costs in the model: capex, rent, energy, bandwidth and cloud over the horizon,
the budget caps on them, and the max-throughput objective's scores."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from ortools.sat.python import cp_model

from gpusolve.optimize import finance
from gpusolve.optimize.builder import Builder, CloudVar, Expr, OwnedVar, Var, wsum, wsum_expr
from gpusolve.optimize.financing import FinancingVars
from gpusolve.optimize.ir import CloudOption, Instance, OwnedOption
from gpusolve.optimize.packing import SitePacking


def money_terms(
    b: Builder,
    instance: Instance,
    servers: dict[tuple[str, str], Var],
    packing: dict[str, SitePacking],
    used: dict[str, Var],
    owned: Sequence[OwnedVar],
    cloud: Sequence[CloudVar],
    bought: Mapping[tuple[str, str], Expr] | None = None,
) -> tuple[Expr, Expr, Expr, Expr, Expr, Expr]:
    """(capex, rent, energy, bandwidth, cloud, residual) over the whole horizon: one place
    for every model that prices a plan (this one, the two-stage scenario model). `bought`:
    the servers bought per (SKU, site) when some are owned (`inventory.py`); by default
    every server in service is bought."""
    h = instance.horizon_months
    skus, sites = instance.skus, instance.sites
    if bought is None:
        capex = wsum([(skus[k].capex, v) for (k, _), v in servers.items() if k in skus])
        residual = wsum([(skus[k].residual, v) for (k, _), v in servers.items() if k in skus])
    else:
        capex = wsum_expr([(skus[k].capex, v) for (k, _), v in bought.items() if k in skus])
        residual = wsum_expr([(skus[k].residual, v) for (k, _), v in bought.items() if k in skus])
    energy = server_energy(instance, servers, owned)
    rent = wsum_expr(
        [
            (finance.rent_months(h, sites[s].rent_months) * sites[s].rack_rent_month, p.total)
            for s, p in packing.items()
        ]
    )
    rent += wsum([(sites[s].setup_fee, v) for s, v in used.items()])
    bandwidth = wsum([(h * sites[s].bandwidth_month, v) for s, v in used.items()])
    bandwidth += bandwidth_by_duty(b, owned, used)
    return capex, rent, energy, bandwidth, cloud_spend(cloud) + owned_rent(owned), residual


def server_energy(
    instance: Instance, servers: Mapping[tuple[str, str], Var], owned: Sequence[OwnedVar]
) -> Expr:
    """Energy over the horizon: every server in service at idle power all the time, and
    what each chosen placement draws above idle while its workload runs."""
    h = instance.horizon_months
    return wsum(
        [(h * instance.sites[s].energy_month.get(k, 0), v) for (k, s), v in servers.items()]
        + [(o.placement.busy_energy, o.var) for o in owned]
    )


def owned_rent(owned: Sequence[OwnedVar], bridged: bool = True) -> Expr:
    """What owned options rent: a workload on servers with a lead time rents until
    delivery, or on owned servers moved to its site until they arrive (`bridged`; a
    schedule prices that by period, `phased/switching.py`), and a mixed option's burst
    carries the demand its servers do not."""
    terms = [(o.option.burst.cost_total, o.var) for o in owned if o.option.burst is not None]
    if bridged:
        terms += [(o.option.bridge, o.var) for o in owned if o.option.bridge]
        terms += [(o.placement.bridge, o.var) for o in owned if o.placement.bridge]
    return wsum(terms)


def cloud_spend(cloud: Sequence[CloudVar]) -> Expr:
    """Rentals over the horizon: each chosen cloud option's whole cost."""
    return wsum([(c.option.cost_total, c.var) for c in cloud])


# What one workload at the best throughput it can reach scores, at weight 1: shares are
# resolved to 1/10,000 of a workload's best (finer than any estimate is right).
THROUGHPUT_SCALE = 10_000


def throughput_scores(instance: Instance) -> dict[str, int]:
    """The max-throughput objective's integer score of every option, by key.

    Tokens/s of different models are not comparable (a 7B service's tokens are cheaper than
    a 70B run's), so the objective never adds them: each option scores its workload's
    weight x (its throughput / the best throughput that workload reaches on any of its
    options) x THROUGHPUT_SCALE, rounded. Within one workload the score still rises with
    throughput, so throughput dominance (`prune.py`) stays valid.
    """
    options: list[OwnedOption | CloudOption] = [*instance.owned, *instance.cloud]
    best: dict[str, int] = defaultdict(int, instance.throughput_best)
    for option in options:
        best[option.workload] = max(best[option.workload], option.throughput)
    out: dict[str, int] = {}
    for option in options:
        top = best[option.workload]
        weight = instance.throughput_weights.get(option.workload, 1.0)
        share = option.throughput / top if top else 0.0
        out[option.key] = round(THROUGHPUT_SCALE * weight * share)
    return out


def bandwidth_by_duty(b: Builder, owned: Sequence[OwnedVar], used: dict[str, Var]) -> Expr:
    """Mbps beyond each used site's included bandwidth, where workloads there need more
    (`finance.extra_bandwidth_cost`); nothing at sites where none states a demand."""
    demands: dict[str, list[tuple[str, int, Var]]] = defaultdict(list)
    for o in owned:
        if o.option.bandwidth_mbps > 0:
            demands[o.placement.site].append((o.option.slot, o.option.bandwidth_mbps, o.var))
    total: Expr = cp_model.LinearExpr.weighted_sum([], [])
    for site_id in sorted(demands):
        site = b.instance.sites[site_id]
        total += finance.extra_bandwidth_cost(
            b.model,
            site_id,
            site.bandwidth_mbps,
            site.extra_mbps_cost,
            used[site_id],
            demands[site_id],
        )
    return total


def add_budgets(b: Builder, capex: Expr, opex: Expr, fin: FinancingVars | None = None) -> None:
    """Budget caps as named requirements. The monthly cap is compared over the whole
    horizon (horizon x cap) so no division appears and the comparison stays exact; the
    total cap bounds capex + opex (what is spent; the residual value is not cash).
    Financed servers (`financing.py`): the capex cap counts their down payments only, the
    monthly cap their instalments within the horizon, the total cap all they cost."""
    inst = b.instance
    total = capex + opex
    if fin is not None:
        total += fin.extra
        capex = capex - fin.financed
        opex = opex + fin.instalments
    if inst.capex_max is not None and b.enforced("capex"):
        b.guard(b.model.add(capex <= inst.capex_max), "capex")
    if inst.monthly_max is not None and b.enforced("monthly"):
        b.guard(b.model.add(opex <= inst.horizon_months * inst.monthly_max), "monthly")
    if inst.total_max is not None and b.enforced("total"):
        b.guard(b.model.add(total <= inst.total_max), "total")
