"""Build the CP-SAT model of an `Instance`.

The model is built once and never carries an objective: `solve`, `explain` and
`alternatives` each `clone()` it and add their own objective and cuts, so one build serves
the lexicographic stages, the explanation and the top-k loop. CP-SAT variables and linear
expressions address the model proto by index, so the `IntVar`s and expressions kept here
are valid on every clone (verified on ortools 9.15, which the project pins).

Modelling choices and why (measurements in cpsat-notes §1.3, §4.5):

* One Bool per (owned option, site) and per cloud option, with `add_exactly_one` per
  workload: linear structure the LP relaxation and presolve can use. An index variable
  with `add_element` never got past FEASIBLE in 30 s on the same family.
* Servers are integers per (SKU, site), shared by day and night work (H29): one `<=` per
  slot instead of per workload.
* Racks are counted per maximal fill pattern (`patterns.py`): symmetry-free, so proofs are
  fast. When a site has more patterns than `pattern_limit`, that site alone gets an
  aggregate relaxation of its packing, made exact by cuts added between solves (`lazy.py`);
  explain mode, whose feasibility answers must be exact in one solve, gets one integer
  vector per rack with symmetry breaking instead (exact, but slower to prove).
* `used[site]` is linked to the choices by one linear row per (workload, site): the
  workload's placements there sum to at most `used`. CP-SAT's linear relaxation leaves out
  implications (enforced bool_and) at its default level, which dropped the fixed
  bandwidth and the racks from the LP bound (M instances: root bound 41 % below the optimum
  instead of 6 %); the summed row is also tighter than one row per choice.
* Every user-level requirement is a named literal `req:<name>`. In normal mode options
  and placements that violate a requirement are not even created and the requirement's
  own constraints are hard; in explain mode everything is created and the literals are
  left free, so assumptions over them name the requirements that conflict.
* Dominated options, unusable placements and (in normal mode) options that violate a
  requirement never reach the model (`prune.py`); sites no remaining option can use get
  no variables at all, and each site's patterns only cover the SKUs placeable there.
* Bounds are tight: servers by the largest demand the options can put on a (SKU, site),
  racks per pattern by what that pattern alone needs for that demand, racks per site by
  availability (or, where availability is relaxed, by homogeneous racks for the demand).
* All coefficients are integers (money in whole units, W, U), so objectives are exact.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ortools.sat.python import cp_model

from gpusolve.optimize import finance
from gpusolve.optimize.fabric import FabricVars, add_fabric, with_infrastructure
from gpusolve.optimize.guard import check_scale
from gpusolve.optimize.ir import (
    SLOTS_COVERED,
    CloudOption,
    Instance,
    OwnedOption,
    Placement,
    Requirement,
    Site,
)
from gpusolve.optimize.lazy import RelaxedSite
from gpusolve.optimize.patterns import (
    Shape,
    SitePatterns,
    TooManyPatterns,
    first_fit_decreasing,
    max_count,
    shape_classes,
    site_patterns,
)
from gpusolve.optimize.prune import usable_cloud, usable_owned

Mode = Literal["normal", "explain"]
Var = cp_model.IntVar
Expr = cp_model.LinearExpr

SLOTS = ("day", "night")


@dataclass(frozen=True)
class BuildOptions:
    """How to build: normal (requirements hard) or explain (requirements as literals).

    `relax` names requirements left out entirely in a normal build (used to measure how far
    one requirement must move); `pattern_limit` is the per-site column budget before the
    site falls back to per-rack variables, `large_pattern_limit` the budget from
    `large_choices` choice variables up.
    """

    mode: Mode = "normal"
    relax: frozenset[str] = frozenset()
    pattern_limit: int = 2000
    # At 40x120x40 (85-100k choices) every site that enumerated had at most 786 fills,
    # while the 33-35 sites over the limit searched 1.7 s of a 3.8 s build to find out;
    # 1000 halves that search. At 20x60x20 a limit of 1000 was slower (1-worker median
    # 7.4 -> 7.9 s: sites lose their exact columns), so the smaller budget is for the
    # largest models only, where the time goes to the core search (`core.py`).
    large_pattern_limit: int = 1000
    large_choices: int = 50_000
    prune_dominated: bool = True
    fallback: Literal["lazy", "bins"] = "lazy"  # explain mode always uses "bins"


@dataclass(frozen=True)
class OwnedVar:
    option: OwnedOption
    placement: Placement
    var: Var
    rank: int  # position among this workload's choices, for the deterministic tie-break


@dataclass(frozen=True)
class CloudVar:
    option: CloudOption
    var: Var
    rank: int


@dataclass(frozen=True)
class RackBin:
    """One rack of the per-rack fallback: open flag and slots used per shape."""

    open: Var
    counts: tuple[Var, ...]


@dataclass(frozen=True)
class SitePacking:
    """The packing variables of one site, in whichever formulation it got."""

    site: Site
    patterns: SitePatterns  # shapes and members always; fills empty in bin mode
    pattern_racks: tuple[Var, ...]  # racks per fill (pattern mode)
    bins: tuple[RackBin, ...]  # per-rack fallback (bin mode)
    total: Expr  # racks rented at this site
    total_ub: int
    relaxed: RelaxedSite | None = None  # aggregate relaxation (lazy mode), R is `total`


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

    @property
    def tco(self) -> Expr:
        spend = self.capex + self.rent + self.energy + self.bandwidth + self.cloud_cost
        return spend - self.residual

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
        for site, pack in self.packing.items():
            out[site] += list(pack.pattern_racks)
            for rack in pack.bins:
                out[site] += [rack.open, *rack.counts]
            if pack.relaxed is not None:
                out[site].append(pack.relaxed.racks)
        return out

    def close(self, model: cp_model.CpModel, indices: Iterable[int]) -> None:
        """Fix these choice variables of a clone of the model to 0. The domain is set,
        not `var == 0` added: at 40x120x40 that would be 80-100k more rows."""
        for index in indices:
            model.proto.variables[index].domain[1] = 0

    @property
    def relaxed(self) -> list[RelaxedSite]:
        """Sites whose packing is relaxed: solves must check them (`lazy.violated`)."""
        return [p.relaxed for p in self.packing.values() if p.relaxed is not None]


# --------------------------------------------------------------------------- checks


def instance_errors(instance: Instance) -> list[str]:
    """Contract violations of the IR that would make the model meaningless."""
    errors: list[str] = []
    workloads = set(instance.workloads)
    keys = [o.key for o in instance.owned] + [c.key for c in instance.cloud]
    if len(set(keys)) != len(keys):
        errors.append("option keys are not unique")
    if instance.horizon_months < 1:
        errors.append("horizon_months must be >= 1")
    for sku in instance.skus.values():
        if sku.rack_units < 1 or sku.power_w < 0 or sku.capex < 0:
            errors.append(f"sku {sku.id}: needs rack_units >= 1, power_w >= 0, capex >= 0")
        if not 0 <= sku.residual <= sku.capex:
            errors.append(f"sku {sku.id}: residual value must be within 0..capex")
    for option in instance.owned:
        if option.workload not in workloads:
            errors.append(f"option {option.key}: unknown workload {option.workload}")
        if option.sku not in instance.skus:
            errors.append(f"option {option.key}: unknown sku {option.sku}")
        if option.servers < 1:
            errors.append(f"option {option.key}: servers must be >= 1")
        for placement in option.placements:
            site = instance.sites.get(placement.site)
            if site is None:
                errors.append(f"option {option.key}: unknown site {placement.site}")
            elif option.sku not in site.energy_month:
                errors.append(f"site {site.id}: no energy_month for sku {option.sku}")
    for cloud in instance.cloud:
        if cloud.workload not in workloads:
            errors.append(f"cloud option {cloud.key}: unknown workload {cloud.workload}")
    errors += _negative_numbers(instance)
    return errors


def _negative_numbers(instance: Instance) -> list[str]:
    """Prices, penalties, throughputs and headrooms are non-negative: the bounds, the
    fewest-racks argument and dominance all rely on costs never falling as more is used."""
    errors: list[str] = []
    for site in instance.sites.values():
        numbers = [site.rack_w, site.rack_units, site.racks_available, site.rack_rent_month]
        numbers += [site.bandwidth_month, *site.energy_month.values()]
        if min(numbers) < 0:
            errors.append(f"site {site.id}: negative capacity or price")
    options: list[OwnedOption | CloudOption] = [*instance.owned, *instance.cloud]
    for option in options:
        numbers = [option.penalty, option.throughput, option.headroom_permille]
        if isinstance(option, OwnedOption):
            numbers += [p.penalty for p in option.placements]
            numbers += [p.busy_energy for p in option.placements]
        else:
            numbers.append(option.cost_total)
        if min(numbers) < 0:
            errors.append(f"option {option.key}: negative price, penalty or figure")
    for cap in (instance.capex_max, instance.monthly_max):
        if cap is not None and cap < 0:
            errors.append("budget caps must be >= 0")
    return errors


# --------------------------------------------------------------------------- build


def requirement_names(instance: Instance, owned: Sequence[OwnedOption]) -> list[str]:
    """Every requirement the model may need a literal for, in a stable order."""
    names: set[str] = set()
    for option in instance.owned:
        names |= option.violates
        for p in option.placements:
            names |= p.violates
    for cloud in instance.cloud:
        names |= cloud.violates
    if instance.capex_max is not None:
        names.add("capex")
    if instance.monthly_max is not None:
        names.add("monthly")
    for site in sorted({p.site for o in owned for p in o.placements}):
        names.add(f"racks:{site}")
    return sorted(names)


def _describe(instance: Instance, name: str) -> Requirement:
    known = instance.requirements.get(name)
    if known is not None:
        return known
    if name.startswith("racks:"):
        site = instance.sites[name.removeprefix("racks:")]
        return Requirement(name, f"{site.racks_available} racks available at {site.id}")
    if name == "capex":
        return Requirement(name, f"purchase budget of {instance.capex_max}")
    if name == "monthly":
        return Requirement(name, f"monthly budget of {instance.monthly_max}")
    return Requirement(name, name)


class _Builder:
    """Holds the model while the constraint families are added one by one."""

    def __init__(self, instance: Instance, options: BuildOptions) -> None:
        self.instance = instance
        self.options = options
        self.mode = options.mode
        self.relax = options.relax if options.mode == "normal" else frozenset()
        self.model = cp_model.CpModel()
        self.literals: dict[str, Var] = {}

    # A requirement's constraints carry `req:<name>` in explain mode, are hard in normal
    # mode, and vanish when the requirement is relaxed.
    def enforced(self, name: str) -> bool:
        return name not in self.relax

    def literal(self, name: str) -> Var | None:
        if self.mode == "normal":
            return None
        lit = self.literals.get(name)
        if lit is None:
            lit = self.model.new_bool_var(f"req:{name}")
            self.literals[name] = lit
        return lit

    def guard(self, constraint: cp_model.Constraint, name: str) -> None:
        lit = self.literal(name)
        if lit is not None:
            constraint.only_enforce_if(lit)


def build(instance: Instance, options: BuildOptions | None = None) -> Built:
    """Build the model. Raises ValueError on a malformed instance (a bug upstream)."""
    options = options or BuildOptions()
    errors = instance_errors(instance)
    if errors:
        raise ValueError("; ".join(errors))
    check_scale(instance)  # an instance that would overflow int64 is an input error
    b = _Builder(instance, options)
    owned_opts = usable_owned(instance, b.mode, b.relax, options.prune_dominated)
    cloud_opts = usable_cloud(instance, b.mode, b.relax, options.prune_dominated)
    names = requirement_names(instance, owned_opts)
    if b.mode == "explain":
        for name in names:
            b.literal(name)

    owned, cloud = _choice_vars(b, owned_opts, cloud_opts)
    unplaceable = _exactly_one(b, owned, cloud)
    servers, servers_ub = _server_vars(b, owned)
    used = _site_used(b, owned)
    packing = _packing(b, owned, servers, servers_ub, used, len(owned) + len(cloud))

    racks_at = {site: pack.total for site, pack in packing.items()}
    available = {
        s: instance.sites[s].racks_available
        for s in racks_at
        if b.mode == "normal" and b.enforced(f"racks:{s}")
    }
    net = add_fabric(b.model, instance, owned, servers, racks_at, available)
    money = money_terms(b, instance, servers, packing, used, owned, cloud)
    capex, rent, energy, bandwidth, cloud_cost, residual = money
    # Capex is servers, their network and storage: budgets, min-capex and the TCO see all.
    capex, rent = with_infrastructure(instance, net, capex, rent)
    network = net.network
    penalties = _wsum(
        [(o.option.penalty + o.placement.penalty, o.var) for o in owned]
        + [(c.option.penalty, c.var) for c in cloud]
    )
    _budgets(b, capex, rent + energy + bandwidth + cloud_cost)

    scores = throughput_scores(instance)
    throughput = _wsum(
        [(scores[o.option.key], o.var) for o in owned]
        + [(scores[c.option.key], c.var) for c in cloud]
    )
    headroom = _wsum(
        [(o.option.headroom_permille, o.var) for o in owned]
        + [(c.option.headroom_permille, c.var) for c in cloud]
    )
    racks_total = _wsum_expr([(1, p.total) for p in packing.values()])
    racks_total = racks_total + _wsum([(1, v) for v in net.racks.values()])
    servers_total = _wsum([(1, v) for v in servers.values()])
    rank = _rank_expr(owned, cloud, packing)

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
        requirements={n: _describe(instance, n) for n in names},
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


def money_terms(
    b: _Builder,
    instance: Instance,
    servers: dict[tuple[str, str], Var],
    packing: dict[str, SitePacking],
    used: dict[str, Var],
    owned: Sequence[OwnedVar],
    cloud: Sequence[CloudVar],
) -> tuple[Expr, Expr, Expr, Expr, Expr, Expr]:
    """(capex, rent, energy, bandwidth, cloud, residual) over the whole horizon: one place
    for every model that prices a plan (this one, the two-stage scenario model)."""
    h = instance.horizon_months
    skus, sites = instance.skus, instance.sites
    capex = _wsum([(skus[k].capex, v) for (k, _), v in servers.items() if k in skus])
    residual = _wsum([(skus[k].residual, v) for (k, _), v in servers.items() if k in skus])
    energy = _wsum(
        [(h * sites[s].energy_month.get(k, 0), v) for (k, s), v in servers.items()]
        + [(o.placement.busy_energy, o.var) for o in owned]
    )
    rent = _wsum_expr(
        [
            (finance.rent_months(h, sites[s].rent_months) * sites[s].rack_rent_month, p.total)
            for s, p in packing.items()
        ]
    )
    rent += _wsum([(sites[s].setup_fee, v) for s, v in used.items()])
    bandwidth = _wsum([(h * sites[s].bandwidth_month, v) for s, v in used.items()])
    bandwidth += _bandwidth_by_duty(b, owned, used)
    cloud_cost = _wsum([(c.option.cost_total, c.var) for c in cloud])
    return capex, rent, energy, bandwidth, cloud_cost, residual


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


def _wsum(terms: Sequence[tuple[int, Var]]) -> Expr:
    """Integer weighted sum; drops zero coefficients so the proto stays small."""
    kept = [(c, v) for c, v in terms if c != 0]
    return cp_model.LinearExpr.weighted_sum([v for _, v in kept], [c for c, _ in kept])


def _wsum_expr(terms: Sequence[tuple[int, Expr]]) -> Expr:
    total: Expr = cp_model.LinearExpr.weighted_sum([], [])
    for coef, expr in terms:
        if coef:
            total = total + coef * expr
    return total


def _choice_vars(
    b: _Builder, owned_opts: Sequence[OwnedOption], cloud_opts: Sequence[CloudOption]
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


def _exactly_one(
    b: _Builder, owned: Sequence[OwnedVar], cloud: Sequence[CloudVar]
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


def _server_vars(
    b: _Builder, owned: Sequence[OwnedVar]
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
        ub = max(_max_demand(terms) for terms in slot_terms.values()) + int(b.instance.spares)
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
            need = _wsum([(o.option.servers, o.var) for o in terms])
            b.model.add(need <= n)
            demand[key].append(need)
    if b.instance.spares:
        users = {key: [o.var for o in group] for key, group in by_key.items()}
        finance.spare_flags(b.model, servers, users, demand)
    return servers, bounds


def _max_demand(terms: Sequence[OwnedVar]) -> int:
    per_workload: dict[str, int] = defaultdict(int)
    for o in terms:
        w = o.option.workload
        per_workload[w] = max(per_workload[w], o.option.servers)
    return sum(per_workload.values())


def _site_used(b: _Builder, owned: Sequence[OwnedVar]) -> dict[str, Var]:
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


def _packing(
    b: _Builder,
    owned: Sequence[OwnedVar],
    servers: dict[tuple[str, str], Var],
    servers_ub: dict[tuple[str, str], int],
    used: dict[str, Var],
    choices: int,
) -> dict[str, SitePacking]:
    out: dict[str, SitePacking] = {}
    skus_at: dict[str, set[str]] = defaultdict(set)
    users: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for o in owned:
        skus_at[o.placement.site].add(o.option.sku)
        users[o.placement.site][o.option.sku].add(o.option.workload)
    limit = b.options.pattern_limit
    if choices >= b.options.large_choices:
        limit = min(limit, b.options.large_pattern_limit)
    for site_id in sorted(skus_at):
        site = b.instance.sites[site_id]
        skus = [b.instance.skus[k] for k in sorted(skus_at[site_id])]
        demand_ub = {k: ub for (k, s), ub in servers_ub.items() if s == site_id}
        try:
            pats = site_patterns(
                site,
                skus,
                skus_at[site_id],
                limit,
                demand_ub,
                users[site_id],
            )
            pack = _pattern_packing(b, site, pats, servers, demand_ub)
        except TooManyPatterns:
            shapes, members = shape_classes(skus)
            pats = SitePatterns(site_id, shapes, members, ())
            if b.mode == "normal" and b.options.fallback == "lazy":
                pack = _relaxed_packing(b, site, pats, servers, demand_ub)
            else:
                pack = _bin_packing(b, site, pats, servers, demand_ub)
        out[site_id] = pack
        name = f"racks:{site_id}"
        if b.enforced(name):
            b.guard(b.model.add(pack.total <= site.racks_available), name)
        # Racks only where something is placed (and so bandwidth is paid): a big-M bounded
        # by the site's own rack bound, not an arbitrary constant.
        b.model.add(pack.total <= pack.total_ub * used[site_id])
    return out


def _bandwidth_by_duty(b: _Builder, owned: Sequence[OwnedVar], used: dict[str, Var]) -> Expr:
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


def _racks_bound(b: _Builder, site: Site, pats: SitePatterns, demand_ub: dict[str, int]) -> int:
    """Racks a site can need: first-fit decreasing of the largest demand the options can
    put on it (the fewest racks never grow when servers are removed, so this bounds every
    plan) and, when the availability requirement is hard, no more than are available.
    Far tighter than one homogeneous rack group per shape."""
    counts = {
        shape: sum(demand_ub.get(k, 0) for k in members)
        for shape, members in zip(pats.shapes, pats.members, strict=True)
    }
    hard = b.mode == "normal" and b.enforced(f"racks:{site.id}")
    cap = site.racks_available if hard else None
    return first_fit_decreasing(counts, site.rack_w, site.rack_units, cap)


def _coverage(
    b: _Builder,
    pats: SitePatterns,
    servers: dict[tuple[str, str], Var],
    slots: Sequence[Expr],
) -> None:
    """Slots of each shape hold the servers of every SKU of that shape at the site."""
    for slot, demand in zip(slots, _shape_demand(pats, servers), strict=True):
        b.model.add(slot >= demand)


def _shape_demand(pats: SitePatterns, servers: dict[tuple[str, str], Var]) -> tuple[Expr, ...]:
    """Servers of each shape at the site: the sum over the SKUs of that shape."""
    return tuple(_wsum([(1, servers[(k, pats.site)]) for k in m]) for m in pats.members)


def _pattern_packing(
    b: _Builder,
    site: Site,
    pats: SitePatterns,
    servers: dict[tuple[str, str], Var],
    demand_ub: dict[str, int],
) -> SitePacking:
    total_ub = _racks_bound(b, site, pats, demand_ub)
    shape_ub = [sum(demand_ub.get(k, 0) for k in m) for m in pats.members]
    racks: list[Var] = []
    for i, fill in enumerate(pats.fills):
        # More racks of one fill than it takes to hold the largest demand of every shape
        # in it alone are never needed (they add rent and hold nothing new).
        alone = max(math.ceil(shape_ub[h] / c) for h, c in enumerate(fill) if c)
        racks.append(b.model.new_int_var(0, min(total_ub, alone), f"r[{site.id}#{i}]"))
    slots = [
        _wsum([(fill[h], r) for fill, r in zip(pats.fills, racks, strict=True)])
        for h in range(len(pats.shapes))
    ]
    _coverage(b, pats, servers, slots)
    total = _wsum([(1, r) for r in racks])
    return SitePacking(site, pats, tuple(racks), (), total, total_ub)


def _bin_packing(
    b: _Builder,
    site: Site,
    pats: SitePatterns,
    servers: dict[tuple[str, str], Var],
    demand_ub: dict[str, int],
) -> SitePacking:
    """Per-rack fallback when patterns explode (explain mode, or `fallback="bins"`)."""
    total_ub = _racks_bound(b, site, pats, demand_ub)
    caps = _per_rack_caps(site, pats, demand_ub)
    bins = rack_bins(b.model, site.id, pats.shapes, site.rack_w, site.rack_units, caps, total_ub)
    slots = [_wsum([(1, rack.counts[h]) for rack in bins]) for h in range(len(pats.shapes))]
    _coverage(b, pats, servers, slots)
    total = _wsum([(1, rack.open) for rack in bins])
    return SitePacking(site, pats, (), bins, total, total_ub)


def _per_rack_caps(site: Site, pats: SitePatterns, demand_ub: dict[str, int]) -> tuple[int, ...]:
    """Most servers of each shape one rack can usefully hold: what fits, and no more than
    the site could ever need."""
    return tuple(
        min(max_count(shape, site.rack_w, site.rack_units), sum(demand_ub.get(k, 0) for k in m))
        for shape, m in zip(pats.shapes, pats.members, strict=True)
    )


def rack_bins(
    model: cp_model.CpModel,
    site_id: str,
    shapes: Sequence[Shape],
    rack_w: int,
    rack_units: int,
    caps: Sequence[int],
    racks: int,
) -> tuple[RackBin, ...]:
    """`racks` racks, each holding counts per shape within kW and U. Symmetry breaking:
    open racks come first and carry non-increasing power, so permuting racks cannot produce
    a new solution except among equal loads. Also used by the solve to make a relaxed site
    exact once its packing cuts keep being dodged (`solve._Stages`)."""
    bins: list[RackBin] = []
    loads: list[Expr] = []
    for j in range(racks):
        open_ = model.new_bool_var(f"open[{site_id}#{j}]")
        counts = tuple(
            model.new_int_var(0, cap, f"z[{site_id}#{j},{h}]") for h, cap in enumerate(caps)
        )
        power = _wsum([(s.power_w, c) for s, c in zip(shapes, counts, strict=True)])
        units = _wsum([(s.rack_units, c) for s, c in zip(shapes, counts, strict=True)])
        model.add(power <= rack_w * open_)
        model.add(units <= rack_units * open_)
        if bins:
            model.add_implication(open_, bins[-1].open)
            model.add(power <= loads[-1])
        bins.append(RackBin(open_, counts))
        loads.append(power)
    return tuple(bins)


def _relaxed_packing(
    b: _Builder,
    site: Site,
    pats: SitePatterns,
    servers: dict[tuple[str, str], Var],
    demand_ub: dict[str, int],
) -> SitePacking:
    """Racks R bounded below by what any packing needs: capacity summed over racks,
    each shape's per-rack count, and for k = 1..4, at most k items per rack larger than
    1/(k+1) of its kW (or U). Not exact: the solve adds cuts from exact packings."""
    total_ub = _racks_bound(b, site, pats, demand_ub)
    racks = b.model.new_int_var(0, total_ub, f"R[{site.id}]")
    demand = _shape_demand(pats, servers)
    shapes = pats.shapes
    b.model.add(
        _wsum_expr([(s.power_w, d) for s, d in zip(shapes, demand, strict=True)])
        <= site.rack_w * racks
    )
    b.model.add(
        _wsum_expr([(s.rack_units, d) for s, d in zip(shapes, demand, strict=True)])
        <= site.rack_units * racks
    )
    for s, d in zip(shapes, demand, strict=True):
        b.model.add(d <= max_count(s, site.rack_w, site.rack_units) * racks)
    for k in range(1, 5):
        for sizes, cap in (
            ([s.power_w for s in shapes], site.rack_w),
            ([s.rack_units for s in shapes], site.rack_units),
        ):
            big = [d for size, d in zip(sizes, demand, strict=True) if size * (k + 1) > cap]
            if big:
                b.model.add(_wsum_expr([(1, d) for d in big]) <= k * racks)
    caps = _per_rack_caps(site, pats, demand_ub)
    relaxed = RelaxedSite(
        site.id, shapes, site.rack_w, site.rack_units, demand, racks, caps, total_ub
    )
    return SitePacking(site, pats, (), (), racks, total_ub, relaxed)


def _budgets(b: _Builder, capex: Expr, opex: Expr) -> None:
    """Budget caps as named requirements. The monthly cap is compared over the whole
    horizon (horizon x cap) so no division appears and the comparison stays exact."""
    inst = b.instance
    if inst.capex_max is not None and b.enforced("capex"):
        b.guard(b.model.add(capex <= inst.capex_max), "capex")
    if inst.monthly_max is not None and b.enforced("monthly"):
        b.guard(b.model.add(opex <= inst.horizon_months * inst.monthly_max), "monthly")


def _rank_expr(
    owned: Sequence[OwnedVar], cloud: Sequence[CloudVar], packing: dict[str, SitePacking]
) -> Expr:
    """Deterministic last-resort preference: earlier-listed choices and fills first."""
    terms = [(o.rank, o.var) for o in owned] + [(c.rank, c.var) for c in cloud]
    for pack in packing.values():
        terms += [(i, r) for i, r in enumerate(pack.pattern_racks)]
    return _wsum(terms)
