"""Build the CP-SAT model of an `Instance`: the exact model every solve starts from.

Notation. W workloads, each choosing exactly one of its options: y[o@s] (an owned option o
at site s) or y[c] (a cloud offer c), all Booleans. n[k@s] servers of SKU k bought at site
s, shared by day and night work (H29). used[s]: something is placed at site s (it pays the
site's bandwidth and set-up fee). Racks per site from `packing.py`; the cluster network
and storage from `fabric.py`; money terms from `costs.py`. No objective is set here.

The model is built once and never carries an objective: `solve`, `explain` and
`alternatives` each `clone()` it and add their own objective and cuts. CP-SAT variables
and expressions address the proto by index, so the handles kept in `Built` are valid on
every clone (ortools 9.15, which the project pins).

Modelling choices, each with its reason (the measurements behind them are in
benchmarks/README.md, "Why the model is built as it is"):

* One Bool per (owned option, site) and per cloud option, with `add_exactly_one` per
  workload: linear structure that the LP relaxation and presolve can use.
* Servers are integers per (SKU, site), one `<=` per slot rather than per workload.
* `used[site]` is tied to the choices by one summed row per (workload, site): CP-SAT's
  default LP leaves implications out, and the summed row is the tighter one.
* Every user-level requirement is a named literal `req:<name>`: hard in normal mode (options
  that violate it are never created), free in explain mode, so that assumptions over the
  literals name the requirements that conflict.
* Dominated options and unusable placements never reach the model (`prune.py`); sites no
  option can use get no variables.
* Bounds are tight (servers by the largest demand the options can put on a (SKU, site),
  racks by what the patterns need or availability), and every coefficient is an integer,
  so objectives are exact.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ortools.sat.python import cp_model

from gpusolve.optimize import finance
from gpusolve.optimize.builder import (
    Builder,
    BuildOptions,
    CloudVar,
    Expr,
    Mode,
    OwnedVar,
    Var,
    option_sum,
    wsum,
    wsum_expr,
)
from gpusolve.optimize.checks import describe, instance_errors, requirement_names
from gpusolve.optimize.costs import add_budgets, money_terms, throughput_scores
from gpusolve.optimize.dominance import prune_cloud_across, prune_owned_across
from gpusolve.optimize.fabric import FabricVars, add_fabric, with_infrastructure
from gpusolve.optimize.financing import FinancingVars, financing_terms
from gpusolve.optimize.guard import check_scale
from gpusolve.optimize.inventory import InventoryVars, add_inventory
from gpusolve.optimize.ir import (
    SLOTS_COVERED,
    CloudOption,
    Instance,
    OwnedOption,
    Requirement,
)
from gpusolve.optimize.packing import RelaxedSite, SitePacking, add_packing
from gpusolve.optimize.prune import usable_cloud, usable_owned

SLOTS = ("day", "night")


@dataclass
class Built:
    """A built model and everything needed to read or extend it."""

    model: cp_model.CpModel
    instance: Instance
    mode: Mode
    relax: frozenset[str]
    owned: list[OwnedVar]
    cloud: list[CloudVar]
    servers: dict[tuple[str, str], Var]  # (sku, site)
    packing: dict[str, SitePacking]
    used: dict[str, Var]
    literals: dict[str, Var]  # explain mode: requirement name -> req literal
    requirements: dict[str, Requirement]  # every requirement the model knows, by name
    unplaceable: tuple[str, ...]  # workloads with no choice (explain mode: whatever is relaxed)
    capex: Expr
    rent: Expr
    energy: Expr
    bandwidth: Expr
    cloud_cost: Expr
    penalties: Expr
    throughput: Expr
    headroom: Expr
    racks_total: Expr
    servers_total: Expr
    rank: Expr
    stats: dict[str, int] = field(default_factory=dict)
    # The cluster network (`fabric.py`): its capex is inside `capex`, shown apart.
    network: Expr | int = 0
    fabric: dict[tuple[str, str], FabricVars] = field(default_factory=dict)  # (site, class)
    switch_racks: dict[str, Var] = field(default_factory=dict)  # racks for switches alone
    storage: Expr | int = 0  # shared-storage capex, inside `capex`
    storage_nodes: dict[tuple[str, str], Var] = field(default_factory=dict)  # (site, kind)
    # Owned servers' value at the end of the horizon (`finance.py`): a credit in the TCO.
    residual: Expr = field(default_factory=lambda: cp_model.LinearExpr.weighted_sum([], []))
    # Owned servers and contracted racks (`inventory.py`); None without an inventory.
    inventory: InventoryVars | None = None
    # Bought servers financed (`financing.py`); None when the plan may not finance any.
    financing: FinancingVars | None = None

    @property
    def tco(self) -> Expr:
        spend = self.capex + self.rent + self.energy + self.bandwidth + self.cloud_cost
        if self.financing is not None:
            spend += self.financing.extra
        return spend - self.residual

    @property
    def resale(self) -> Expr | int:
        """Owned servers sold: a credit apart from the TCO that money objectives see."""
        return self.inventory.resale if self.inventory is not None else 0

    @property
    def net_cost(self) -> Expr:
        """What a min-TCO plan minimises before penalties: TCO less the resale credit."""
        steer = self.financing.steer if self.financing is not None else 0
        return self.tco - self.resale + steer

    @property
    def opex(self) -> Expr:
        """Spend other than purchases over the whole horizon (rent, energy, bandwidth,
        cloud): horizon x the average monthly spend, kept integral."""
        return self.rent + self.energy + self.bandwidth + self.cloud_cost

    def choice_vars(self) -> list[Var]:
        """One Bool per (owned option, site) and per cloud option."""
        return [v.var for v in self.owned] + [v.var for v in self.cloud]

    def all_vars(self) -> list[Var]:
        """Every decision variable, for complete hints."""
        out = self.choice_vars()
        out += list(self.servers.values()) + list(self.used.values())
        for fv in self.fabric.values():
            out += fv.variables()
        out += list(self.switch_racks.values())
        out += list(self.storage_nodes.values())
        if self.inventory is not None:
            out += self.inventory.variables()
        if self.financing is not None:
            out += self.financing.variables()
        for pack in self.packing.values():
            out += list(pack.pattern_racks)
            for rack in pack.bins:
                out += [rack.open, *rack.counts]
            if pack.relaxed is not None:
                out.append(pack.relaxed.racks)
        out += list(self.literals.values())
        return out

    def site_vars(self) -> dict[str, list[Var]]:
        """Every variable that belongs to one site: its choices, servers, used flag and
        packing."""
        out: dict[str, list[Var]] = {site: [var] for site, var in self.used.items()}
        for o in self.owned:
            out[o.placement.site].append(o.var)
        for (_, site), var in self.servers.items():
            out[site].append(var)
        for (site, _), fv in self.fabric.items():
            out[site] += fv.variables()
        for site, var in self.switch_racks.items():
            out[site].append(var)
        for (site, _), var in self.storage_nodes.items():
            out[site].append(var)
        if self.inventory is not None:
            for site, variables in self.inventory.site_variables().items():
                out[site] += variables
        if self.financing is not None:
            for site, variables in self.financing.site_variables().items():
                out[site] += variables
        for site, pack in self.packing.items():
            out[site] += list(pack.pattern_racks)
            for rack in pack.bins:
                out[site] += [rack.open, *rack.counts]
            if pack.relaxed is not None:
                out[site].append(pack.relaxed.racks)
        return out

    def close(self, model: cp_model.CpModel, indices: Iterable[int]) -> None:
        """Fix these choice variables of a clone of the model to 0. The domain is set,
        not `var == 0` added: one row per variable would swell the largest models."""
        for index in indices:
            model.proto.variables[index].domain[1] = 0

    @property
    def relaxed(self) -> list[RelaxedSite]:
        """Sites whose packing is relaxed: solves must check them (`lazy.violated`)."""
        return [p.relaxed for p in self.packing.values() if p.relaxed is not None]


def build(instance: Instance, options: BuildOptions | None = None) -> Built:
    """Build the model. Raises ValueError on a malformed instance (a bug upstream)."""
    options = options or BuildOptions()
    errors = instance_errors(instance)
    if errors:
        raise ValueError("; ".join(errors))
    check_scale(instance)  # an instance that would overflow int64 is an input error
    b = Builder(instance, options)
    owned_opts = usable_owned(instance, b.mode, b.relax, options.prune_dominated)
    cloud_opts = usable_cloud(instance, b.mode, b.relax, options.prune_dominated)
    if options.prune_dominated and options.prune_across and b.mode == "normal":
        owned_opts = prune_owned_across(instance, owned_opts)
        cloud_opts = prune_cloud_across(instance, cloud_opts)
    names = requirement_names(instance, owned_opts)
    if b.mode == "explain":
        for name in names:
            b.literal(name)

    owned, cloud = choice_vars(b, owned_opts, cloud_opts)
    unplaceable = exactly_one(b, owned, cloud)
    servers, servers_ub = server_vars(b, owned)
    used = site_used(b, owned)
    packing = add_packing(b, owned, servers, servers_ub, used, len(owned) + len(cloud))

    racks_at = {site: pack.total for site, pack in packing.items()}
    available = {
        s: instance.sites[s].racks_available
        for s in racks_at
        if b.mode == "normal" and b.enforced(f"racks:{s}")
    }
    net = add_fabric(b.model, instance, owned, servers, racks_at, available)
    inv = inventory_terms(b, servers, servers_ub, packing)
    bought = inv.bought if inv is not None else None
    money = money_terms(b, instance, servers, packing, used, owned, cloud, bought)
    capex, rent, energy, bandwidth, cloud_cost, residual = money
    if inv is not None:
        rent += inv.rent_credit + inv.moves
    # Capex is servers, their network and storage: budgets, min-capex and the TCO see all.
    capex, rent = with_infrastructure(instance, net, capex, rent)
    network = net.network
    penalties = wsum(
        [(o.option.penalty + o.option.burst_penalty + o.placement.penalty, o.var) for o in owned]
        + [(c.option.penalty, c.var) for c in cloud]
    )
    fin = financing_terms(b.model, instance, bought or servers, servers_ub)
    add_budgets(b, capex, rent + energy + bandwidth + cloud_cost, fin)

    scores = throughput_scores(instance)
    throughput = option_sum(owned, cloud, lambda option: scores[option.key])
    headroom = option_sum(owned, cloud, lambda option: option.headroom_permille)
    racks_total = wsum_expr([(1, p.total) for p in packing.values()])
    racks_total = racks_total + wsum([(1, v) for v in net.racks.values()])
    servers_total = wsum([(1, v) for v in servers.values()])
    rank = rank_expr(owned, cloud, packing)

    built = Built(
        model=b.model,
        instance=instance,
        mode=b.mode,
        relax=b.relax,
        owned=owned,
        cloud=cloud,
        servers=servers,
        packing=packing,
        used=used,
        literals=b.literals,
        requirements={n: describe(instance, n) for n in names},
        unplaceable=unplaceable,
        capex=capex,
        rent=rent,
        energy=energy,
        bandwidth=bandwidth,
        cloud_cost=cloud_cost,
        penalties=penalties,
        throughput=throughput,
        headroom=headroom,
        racks_total=racks_total,
        servers_total=servers_total,
        rank=rank,
        network=network,
        fabric=net.fabric,
        switch_racks=net.racks,
        storage=net.storage,
        storage_nodes=net.storage_nodes,
        residual=residual,
        inventory=inv,
        financing=fin,
    )
    built.stats = {
        "owned_options_in": len(instance.owned),
        "owned_options": len(owned_opts),
        "cloud_options_in": len(instance.cloud),
        "cloud_options": len(cloud_opts),
        "choice_vars": len(owned) + len(cloud),
        "server_vars": len(servers),
        "sites_used": len(packing),
        "patterns": sum(len(p.pattern_racks) for p in packing.values()),
        "bin_sites": sum(1 for p in packing.values() if p.bins),
        "relaxed_sites": sum(1 for p in packing.values() if p.relaxed is not None),
    }
    return built


def inventory_terms(
    b: Builder,
    servers: dict[tuple[str, str], Var],
    servers_ub: dict[tuple[str, str], int],
    packing: dict[str, SitePacking],
) -> InventoryVars | None:
    """The inventory family (`inventory.py`), only when the instance holds one."""
    if not b.instance.stock and not b.instance.contracts:
        return None
    racks_at = {site: pack.total for site, pack in packing.items()}
    racks_ub = {site: pack.total_ub for site, pack in packing.items()}
    return add_inventory(b.model, b.instance, servers, servers_ub, racks_at, racks_ub)


def choice_vars(
    b: Builder, owned_opts: Sequence[OwnedOption], cloud_opts: Sequence[CloudOption]
) -> tuple[list[OwnedVar], list[CloudVar]]:
    """One Bool per (owned option, site) and per cloud option; in explain mode a chosen
    option implies every requirement it violates is switched off."""
    owned: list[OwnedVar] = []
    cloud: list[CloudVar] = []
    rank: dict[str, int] = defaultdict(int)
    for option in owned_opts:
        for placement in option.placements:
            var = b.model.new_bool_var(f"y[{option.key}@{placement.site}]")
            owned.append(OwnedVar(option, placement, var, rank[option.workload]))
            rank[option.workload] += 1
            for name in sorted(option.violates | placement.violates):
                lit = b.literal(name)
                if lit is not None:
                    b.model.add_implication(lit, ~var)
    for c in cloud_opts:
        var = b.model.new_bool_var(f"y[{c.key}]")
        cloud.append(CloudVar(c, var, rank[c.workload]))
        rank[c.workload] += 1
        for name in sorted(c.violates):
            lit = b.literal(name)
            if lit is not None:
                b.model.add_implication(lit, ~var)
    return owned, cloud


def exactly_one(
    b: Builder, owned: Sequence[OwnedVar], cloud: Sequence[CloudVar]
) -> tuple[str, ...]:
    """Each workload runs exactly once: structural, never relaxed. Returns the workloads
    left with no choice at all (the model is then infeasible whatever is relaxed)."""
    per: dict[str, list[Var]] = {w: [] for w in b.instance.workloads}
    for o in owned:
        per[o.option.workload].append(o.var)
    for c in cloud:
        per[c.option.workload].append(c.var)
    for vars_ in per.values():
        b.model.add_exactly_one(vars_)
    return tuple(w for w, vars_ in per.items() if not vars_)


def server_vars(
    b: Builder, owned: Sequence[OwnedVar]
) -> tuple[dict[tuple[str, str], Var], dict[tuple[str, str], int]]:
    """Servers per (SKU, site) cover every slot's demand; day and night work share them.

    The upper bound is the worst slot's sum, over workloads, of the largest option that
    workload could place there: exactly-one makes anything above it useless.
    """
    by_key: dict[tuple[str, str], list[OwnedVar]] = defaultdict(list)
    for o in owned:
        by_key[(o.option.sku, o.placement.site)].append(o)
    servers: dict[tuple[str, str], Var] = {}
    bounds: dict[tuple[str, str], int] = {}
    demand: dict[tuple[str, str], list[Expr]] = defaultdict(list)
    for key in sorted(by_key):
        group = by_key[key]
        slot_terms = {t: [o for o in group if t in SLOTS_COVERED[o.option.slot]] for t in SLOTS}
        ub = max(max_demand(terms) for terms in slot_terms.values()) + int(b.instance.spares)
        n = b.model.new_int_var(0, ub, f"n[{key[0]}@{key[1]}]")
        servers[key] = n
        bounds[key] = ub
        seen: set[tuple[int, ...]] = set()
        for t in SLOTS:
            terms = slot_terms[t]
            signature = tuple(o.var.index for o in terms)
            if not terms or signature in seen:
                continue  # all-"always" groups give the same row twice
            seen.add(signature)
            need = wsum([(o.option.servers, o.var) for o in terms])
            b.model.add(need <= n)
            demand[key].append(need)
    if b.instance.spares:
        users = {key: [o.var for o in group] for key, group in by_key.items()}
        finance.spare_flags(b.model, servers, users, demand)
    return servers, bounds


def max_demand(terms: Sequence[OwnedVar]) -> int:
    per_workload: dict[str, int] = defaultdict(int)
    for o in terms:
        w = o.option.workload
        per_workload[w] = max(per_workload[w], o.option.servers)
    return sum(per_workload.values())


def site_used(b: Builder, owned: Sequence[OwnedVar]) -> dict[str, Var]:
    """used[site] is exactly "some workload is placed there": it carries the fixed
    bandwidth cost. Each choice implies it (tighter than a big-M on servers) and it
    implies some choice, so it can never be paid for nothing."""
    by_site: dict[str, list[Var]] = defaultdict(list)
    by_pair: dict[tuple[str, str], list[Var]] = defaultdict(list)
    for o in owned:
        by_site[o.placement.site].append(o.var)
        by_pair[(o.placement.site, o.option.workload)].append(o.var)
    used: dict[str, Var] = {}
    for site in sorted(by_site):
        u = b.model.new_bool_var(f"used[{site}]")
        used[site] = u
        b.model.add_bool_or([~u, *by_site[site]])
    for (site, _), vars_ in sorted(by_pair.items()):
        b.model.add(sum(vars_) <= used[site])
    return used


def rank_expr(
    owned: Sequence[OwnedVar], cloud: Sequence[CloudVar], packing: dict[str, SitePacking]
) -> Expr:
    """Deterministic last-resort preference: earlier-listed choices and fills first."""
    terms = [(o.rank, o.var) for o in owned] + [(c.rank, c.var) for c in cloud]
    for pack in packing.values():
        terms += [(i, r) for i, r in enumerate(pack.pattern_racks)]
    return wsum(terms)
