"""Dominance across server models and rental offers (`optimize/dominance.py`).

Hand-built cases say what is dropped and what must stay; the property test adds copies of
the random instances' servers and rentals (cheaper, dearer, or worse on one count) and
checks the solver's optimum against the brute-force enumerator, which prunes nothing.
"""

from __future__ import annotations

import dataclasses
import random

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.factories.instances import ONE
from tests.support.optimize_reference import evaluate_all, optimum, random_instance

from gpusolve.optimize.builder import BuildOptions
from gpusolve.optimize.dominance import dominated_skus, prune_cloud_across
from gpusolve.optimize.ir import CloudOption, Instance, OwnedOption, Placement, Site, Sku, Stock
from gpusolve.optimize.model import build
from gpusolve.optimize.solve import solve

SITE = Site(
    "s",
    "r",
    "air",
    rack_w=20_000,
    rack_units=42,
    racks_available=4,
    rack_rent_month=100,
    bandwidth_month=0,
    energy_month={"a": 10, "b": 10},
)


def _sku(key: str, capex: int, power_w: int = 5000) -> Sku:
    return Sku(key, capex=capex, power_w=power_w, rack_units=4, cooling=frozenset({"air"}))


def _option(sku: str, servers: int = 2, workload: str = "w") -> OwnedOption:
    return OwnedOption(
        f"{workload}-{sku}-{servers}", workload, sku, servers, "always", (Placement("s"),)
    )


def _instance(a: Sku, b: Sku, owned: tuple[OwnedOption, ...], **more: object) -> Instance:
    return Instance(
        workloads=tuple(sorted({o.workload for o in owned})),
        skus={"a": a, "b": b},
        sites={"s": SITE},
        owned=owned,
        cloud=(),
        horizon_months=12,
        **more,  # type: ignore[arg-type]
    )


def test_a_dearer_copy_of_a_server_is_dropped() -> None:
    instance = _instance(_sku("a", 1000), _sku("b", 1100), (_option("a"), _option("b")))
    assert dominated_skus(instance, instance.owned) == {"b"}


def test_an_equal_price_keeps_both() -> None:
    """Strictly cheaper only: with equal prices the tie-breaks (input order) decide."""
    instance = _instance(_sku("a", 1000), _sku("b", 1000), (_option("a"), _option("b")))
    assert dominated_skus(instance, instance.owned) == frozenset()


def test_a_cheaper_server_drawing_more_power_dominates_nothing() -> None:
    a, b = _sku("a", 1000, power_w=6000), _sku("b", 1100)
    instance = _instance(a, b, (_option("a"), _option("b")))
    assert dominated_skus(instance, instance.owned) == frozenset()


def test_dearer_idle_energy_at_a_site_dominates_nothing() -> None:
    site = dataclasses.replace(SITE, energy_month={"a": 11, "b": 10})
    instance = dataclasses.replace(
        _instance(_sku("a", 1000), _sku("b", 1100), (_option("a"), _option("b"))),
        sites={"s": site},
    )
    assert dominated_skus(instance, instance.owned) == frozenset()


def test_an_option_without_a_counterpart_keeps_its_server() -> None:
    """`b` runs the workload on one server, `a` needs two: `b`'s option has no stand-in."""
    instance = _instance(_sku("a", 1000), _sku("b", 1100), (_option("a", 2), _option("b", 1)))
    assert dominated_skus(instance, instance.owned) == frozenset()


def test_every_workload_needs_a_counterpart() -> None:
    owned = (_option("a", workload="x"), _option("b", workload="x"), _option("b", workload="y"))
    instance = _instance(_sku("a", 1000), _sku("b", 1100), owned)
    assert dominated_skus(instance, instance.owned) == frozenset()


def test_servers_held_in_the_inventory_are_never_dropped() -> None:
    instance = _instance(
        _sku("a", 1000),
        _sku("b", 1100),
        (_option("a"), _option("b")),
        stock=(Stock("b", "s", 2),),
    )
    assert dominated_skus(instance, instance.owned) == frozenset()


def _rental(key: str, cost: int, penalty: int = 0) -> CloudOption:
    return CloudOption(key, "w", key, "r", 1, cost, penalty=penalty)


def test_a_rental_dearer_in_cost_and_penalty_is_dropped() -> None:
    cheap, dear, mixed = _rental("c", 100, 5), _rental("d", 120, 5), _rental("m", 90, 20)
    instance = dataclasses.replace(
        _instance(_sku("a", 1), _sku("b", 1), (_option("a"),)), cloud=(cheap, dear, mixed)
    )
    # `m` is cheaper but carries more penalty: neither it nor `c` beats the other.
    assert prune_cloud_across(instance, instance.cloud) == [cheap, mixed]


def test_top_k_models_keep_every_option() -> None:
    instance = _instance(_sku("a", 1000), _sku("b", 1100), (_option("a"), _option("b")))
    assert len(build(instance).owned) == 1
    assert len(build(instance, BuildOptions(prune_across=False)).owned) == 2


def _copies(instance: Instance, rng: random.Random) -> Instance:
    """Each server and rental again under a new id, its price moved by -15..+5 % and, for
    half of them, a third more power or one server more per option: a cheaper copy worse
    on such a count must not push the original out, a dearer exact one goes, and the
    optimum is the brute force's either way."""
    skus = dict(instance.skus)
    owned = list(instance.owned)
    sites = dict(instance.sites)
    for key, sku in instance.skus.items():
        copy = dataclasses.replace(
            sku,
            id=f"{key}-c",
            capex=max(sku.residual, round(sku.capex * rng.uniform(0.85, 1.05))),
            power_w=sku.power_w + rng.choice((0, sku.power_w // 3)),
        )
        skus[copy.id] = copy
        extra = rng.choice((0, 1))
        owned += [
            dataclasses.replace(o, key=f"{o.key}-c", sku=copy.id, servers=o.servers + extra)
            for o in instance.owned
            if o.sku == key
        ]
    for site_id, site in sites.items():
        energy = dict(site.energy_month)
        energy.update({f"{k}-c": v for k, v in site.energy_month.items()})
        sites[site_id] = dataclasses.replace(site, energy_month=energy)
    cloud = list(instance.cloud)
    cloud += [
        dataclasses.replace(
            c, key=f"{c.key}-c", offer=f"{c.offer}-c", cost_total=round(c.cost_total * 1.05)
        )
        for c in instance.cloud
    ]
    return dataclasses.replace(
        instance, skus=skus, sites=sites, owned=tuple(owned), cloud=tuple(cloud)
    )


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.integers(0, 100_000))
def test_copies_never_change_the_optimum(seed: int) -> None:
    instance = _copies(random_instance(seed), random.Random(seed))
    expected = optimum(instance, evaluate_all(instance))
    solution = solve(instance, ONE)
    if expected is None:
        assert solution.status == "infeasible"
        return
    assert solution.status == "optimal"
    assert solution.objective_value == expected[0]
