"""One candidate (a server SKU or a cloud offer) sized for one workload: the rules on the
card and the candidate, the layout search, every layout size that meets the deadline,
and the layout facts rules test."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gpusolve.candidates.builder import Builder, rule_requirement
from gpusolve.candidates.layout_memo import layouts
from gpusolve.candidates.margin import margin_miss
from gpusolve.candidates.pricing import rental
from gpusolve.candidates.records import MULTI_NODE_FABRICS
from gpusolve.candidates.reserve import RackReserve
from gpusolve.estimate import ConfigEstimate, Hardware
from gpusolve.estimate.search import SearchResult
from gpusolve.models.catalog import Card, Catalog, CloudOffer, ColoOffer, Server
from gpusolve.models.policy import Charge, Penalty, charges
from gpusolve.models.requirements import Workload

# --- owned servers ---------------------------------------------------------------


@dataclass(frozen=True)
class Sized:
    """One candidate (server SKU or cloud offer) sized for one workload, rules applied:
    the preferences it misses are priced once its cost is known (`charges_on`)."""

    estimate: ConfigEstimate
    deployment: dict[str, Any]
    spans_servers: bool
    violates: frozenset[str]
    missed: tuple[tuple[str, Penalty], ...] = ()


def charges_on(missed: Iterable[tuple[str, Penalty]], base: float) -> tuple[Charge, ...]:
    """The charges of the preferences an option misses, priced on its cost `base`."""
    out: tuple[Charge, ...] = ()
    for kind, penalty in missed:
        out += charges(kind, penalty, base)
    return out


def size_layouts(
    b: Builder,
    w: Workload,
    card: Card,
    kind: str,
    subject: Server | CloudOffer,
    hw: Hardware,
    max_nodes: int,
) -> list[Sized]:
    """Rules on the card and the candidate, the layout search, then layout-level rules:
    every layout size that passes them (smallest first).

    Normal mode drops a candidate at the first failed rule (with the reason); explain mode
    keeps it, tagged with the requirements it breaks. A layout that fails a layout-level
    rule is dropped alone; the candidate is rejected (with the smallest layout's reasons)
    only when no layout is left.
    """
    policy = b.policies[w.name]
    context = {"workload": w}
    hits = policy.failed("card", card, context) + policy.failed(kind, subject, context)
    if hits and not b.explain:
        b.reject(w.name, subject.id, [h.sentence() for h in hits])
        return []
    result = layouts(w, hw, policy.params, max_nodes=max_nodes, every_size=True)
    out: list[Sized] = []
    first_reasons: list[str] = []
    for estimate, deadline_tag in _pick(b, w, subject.id, result):
        mode = "owned" if kind == "server" else "cloud"
        spans = _needs_fabric(w, estimate, hw.gpus_per_node)
        deployment = layout_facts(estimate, w.schedule, mode, hw.gpus_per_node, spans)
        dep_context = {"workload": w, "card": card, kind: subject}
        dep_hits = policy.failed("deployment", deployment, dep_context)
        if dep_hits and not b.explain:
            first_reasons = first_reasons or [h.sentence() for h in dep_hits]
            continue
        tags = {rule_requirement(b, h.rule, h.source, h.title) for h in [*hits, *dep_hits]}
        if deadline_tag:
            tags.add(deadline_tag)
        missed = [("deployment", policy.penalty("deployment", deployment, dep_context))]
        parts: tuple[tuple[str, Any], ...] = (("card", card), (kind, subject))
        missed += [(k, policy.penalty(k, item, context)) for k, item in parts]
        out.append(Sized(estimate, deployment, spans, frozenset(tags), tuple(missed)))
    if not out and first_reasons:
        b.reject(w.name, subject.id, first_reasons)
    return out


def fabric_groups(
    catalog: Catalog, server: Server, oversubscription: float = 1.0
) -> list[tuple[float, list[ColoOffer]]]:
    """Colo offers grouped by their fabric's oversubscription: the physics of a multi-node
    job differs between them, so each group is sized on its own (sites without an RDMA
    fabric host single-server layouts only and join the non-blocking group). The fabric
    the plan buys (`requirements.network.oversubscription`) is never better than the
    site's own."""
    groups: dict[float, list[ColoOffer]] = {}
    for offer in catalog.colo_offers.values():
        ratio = 1.0
        if offer.fabric in MULTI_NODE_FABRICS:
            ratio = max(offer.fabric_oversubscription, oversubscription)
        groups.setdefault(ratio, []).append(offer)
    return sorted(groups.items()) or [(1.0, [])]


def node_limit(
    server: Server,
    offers: Iterable[ColoOffer],
    *,
    needs_fabric: bool = True,
    reserves: dict[str, RackReserve] | None = None,
) -> int:
    """How many of `server` one job may span: the most any of these sites holds (racks
    available × servers per rack within its kW and U), on one RDMA fabric capped by its size
    limit when the job needs one. A site's capacity, not a constant, bounds a job (H21
    prefers one node; the layout search and the optimiser weigh more nodes)."""
    best = 1
    for offer in offers:
        reserve = reserves.get(offer.id) if reserves is not None else None
        if cannot_host(server, offer, needs_fabric=needs_fabric, reserve=reserve):
            continue
        kw, units = usable_rack(offer, reserve)
        per_rack = min(int(kw // server.power_kw), units // server.rack_units)
        servers = offer.racks_available * per_rack
        if needs_fabric and offer.fabric_max_nodes is not None:
            servers = min(servers, offer.fabric_max_nodes)
        best = max(best, servers)
    return best


def usable_rack(offer: ColoOffer, reserve: RackReserve | None) -> tuple[float, int]:
    """kW and U of one rack that servers may use: the contracted figures without a reserve."""
    if reserve is None:
        return offer.rack_kw, offer.rack_units
    return reserve.usable_w / 1000, reserve.usable_units


def cannot_host(
    server: Server, offer: ColoOffer, needs_fabric: bool, reserve: RackReserve | None = None
) -> str | None:
    """Physical reasons a site cannot take this server (not relaxable requirements)."""
    kw, units = usable_rack(offer, reserve)
    if offer.cooling not in server.cooling:
        return f"{offer.cooling} racks; the server needs {' or '.join(server.cooling)}"
    if server.power_kw > offer.rack_kw:
        return f"{offer.rack_kw:g} kW racks; one server draws {server.power_kw:g} kW"
    if server.power_kw > kw:
        return (
            f"{offer.rack_kw:g} kW racks of which {kw:g} kW may be drawn continuously; "
            f"one server draws {server.power_kw:g} kW"
        )
    if server.rack_units > offer.rack_units:
        return f"{offer.rack_units}U racks; the server is {server.rack_units}U"
    if server.rack_units > units:
        return (
            f"{offer.rack_units}U racks of which {units}U are free for servers; "
            f"the server is {server.rack_units}U"
        )
    if needs_fabric and offer.fabric not in MULTI_NODE_FABRICS:
        return f"a job across servers needs InfiniBand or RoCE; the site has {offer.fabric}"
    if needs_fabric and server.fabric.kind not in MULTI_NODE_FABRICS:
        return f"a job across servers needs RDMA NICs; the server has {server.fabric.kind}"
    return None


def _pick(
    b: Builder, w: Workload, candidate: str, result: SearchResult
) -> list[tuple[ConfigEstimate, str | None]]:
    """Every layout size that meets the deadline (fewest nodes first): which one is
    cheapest depends on prices, penalties and what else shares the site, so the optimiser
    decides. In explain mode, when none meets it, the fastest, tagged with the deadline.

    The sizes are the search's grid (1, 2, 3, 4, 6, 8, 12 ... nodes) plus the fewest count
    that meets this deadline, bisected between two grid counts. A looser deadline bisects
    elsewhere, so a tighter deadline's bisected count (a rental on it could be a little
    cheaper than on the grid counts around it) is not always in the looser one's space:
    monotone in the deadline up to that count, which refining every grid gap would fix at
    several times the search's cost."""
    feasible = list(result.feasible)
    if not feasible:
        b.reject(w.name, candidate, list(result.rejections) or ["no layout fits in memory"])
        return []
    meeting = [e for e in feasible if e.meets_deadline]
    if meeting:
        return [(e, None) for e in sorted(meeting, key=lambda e: (e.nodes, -e.tokens_per_s))]
    fastest = max(feasible, key=lambda e: e.tokens_per_s)
    hours = (fastest.time_to_train_s or 0) / 3600
    stated, margin = _deadline_words(b, w)
    reason = (
        f"the fastest layout ({fastest.nodes} server(s), {fastest.gpus} GPUs) takes "
        f"{hours:,.1f} h, beyond the {stated}{margin}"
    )
    miss = margin_miss(w, candidate, fastest, b.written_deadline.get(w.name))
    if miss is not None:
        offer = b.catalog.cloud_offers.get(candidate)
        cost = rental(b, w, offer, fastest)[2] if offer is not None else None
        b.margin_misses.append(miss.model_copy(update={"rental_cost": cost}))
    if not b.explain:
        b.reject(w.name, candidate, [reason, *result.rejections][:4])
        return []
    tag = b.require(f"deadline:{w.name}", f"{stated} for {w.name}{margin}", 4)
    return [(fastest, tag)]


def _deadline_words(b: Builder, w: Workload) -> tuple[str, str]:
    """('deadline of 24 h' as written, ' (20.9 h with its margin)' where they differ)."""
    stated = b.written_deadline.get(w.name) or w.deadline_hours or 0.0
    sized = w.deadline_hours or 0.0
    margin = "" if abs(stated - sized) < 1e-9 else f" ({sized:,.1f} h with its margin)"
    return f"deadline of {stated:,.0f} h", margin


def layout_facts(
    estimate: ConfigEstimate, schedule: str, mode: str, gpus_per_node: int, spans_servers: bool
) -> dict[str, Any]:
    """The `deployment` variables rules can test, from one layout estimate.

    `multi_node` means one job (or one inference replica) spans servers and so needs a
    fabric; inference replicas spread over servers behind a load balancer do not.
    """
    layout = estimate.layout
    time_h = estimate.time_to_train_s / 3600 if estimate.time_to_train_s else None
    return {
        "mode": mode,
        "nodes": estimate.nodes,
        "gpus": estimate.gpus,
        "gpus_per_node": gpus_per_node,
        "tp": layout.tp,
        "pp": layout.pp,
        "dp": layout.dp,
        "vp": layout.vp,
        "cp": layout.cp,
        "ep": layout.ep,
        "zero_stage": layout.zero_stage,
        "sharding": layout.sharding,
        "checkpointing": layout.checkpointing,
        "replicas": layout.replicas,
        "memory_per_gpu_gb": estimate.memory_total_bytes / 1e9,
        "card_memory_gb": estimate.card_memory_bytes / 1e9,
        "usable_memory_gb": estimate.usable_memory_bytes / 1e9,
        "mfu": estimate.mfu,
        "comm_fraction": estimate.comm_fraction,
        "checkpoint_stall_fraction": estimate.checkpoint_stall_fraction,
        "time_to_train_h": time_h,
        "meets_deadline": bool(estimate.meets_deadline),
        "multi_node": spans_servers,
        "tokens_per_s": estimate.tokens_per_s,
        "bottleneck": estimate.bottleneck,
        "schedule": schedule,
    }


def _needs_fabric(w: Workload, estimate: ConfigEstimate, gpus_per_node: int) -> bool:
    """Training across servers needs RDMA; inference only when one replica spans servers
    (independent replicas behind a load balancer need no fabric, H27)."""
    if not w.is_training:
        # Disaggregated pools on separate servers send each prompt's KV cache over it.
        serving = estimate.serving
        pooled = serving is not None and serving.disaggregated is not None
        if pooled and estimate.nodes > 1:
            return True
        return bool(estimate.layout.tp * estimate.layout.pp > gpus_per_node)
    return bool(estimate.nodes > 1)
