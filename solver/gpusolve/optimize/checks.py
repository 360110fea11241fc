"""The IR's contract, checked before a model is built, and the requirements a model names."""

from __future__ import annotations

from collections.abc import Sequence

from gpusolve.optimize.ir import CloudOption, Instance, OwnedOption, Requirement


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
    errors += negative_numbers(instance)
    return errors


def negative_numbers(instance: Instance) -> list[str]:
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
            numbers += [p.bridge for p in option.placements]
            numbers += [option.rent, option.burst_penalty]
        else:
            numbers.append(option.cost_total)
        if min(numbers) < 0:
            errors.append(f"option {option.key}: negative price, penalty or figure")
    for cap in (instance.capex_max, instance.monthly_max, instance.total_max):
        if cap is not None and cap < 0:
            errors.append("budget caps must be >= 0")
    return errors


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
    if instance.total_max is not None:
        names.add("total")
    for site in sorted({p.site for o in owned for p in o.placements}):
        names.add(f"racks:{site}")
    return sorted(names)


def describe(instance: Instance, name: str) -> Requirement:
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
    if name == "total":
        return Requirement(name, f"total budget over the horizon of {instance.total_max}")
    return Requirement(name, name)
