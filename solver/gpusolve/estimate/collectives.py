"""Collective communication on a process group: all-reduce, all-gather/reduce-scatter and
MoE all-to-all times, and how a group of ranks lies over nodes and links (`group`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpusolve.estimate import memo
from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.shapes import Arch


def allreduce_s(nbytes: float, ranks: int, bus: float, latency: float) -> float:
    if ranks <= 1 or nbytes <= 0:
        return 0.0
    return 2.0 * (ranks - 1) / ranks * nbytes / bus + latency


def gather_s(nbytes: float, ranks: int, bus: float, latency: float) -> float:
    """All-gather or reduce-scatter of a tensor whose full size is `nbytes`."""
    if ranks <= 1 or nbytes <= 0:
        return 0.0
    return (ranks - 1) / ranks * nbytes / bus + latency


@dataclass(frozen=True)
class Group:
    """A process group laid over nodes: ranks per node, nodes, bus bytes/s, the latency of
    one all-reduce and of one all-gather/reduce-scatter, and the link that bounds it."""

    ranks: int
    per_node: int
    nodes: int
    bus: float
    latency: float  # all-reduce
    gather_latency: float  # all-gather or reduce-scatter (rings only)
    link: str
    exchange_latency: float = 0.0  # all-to-all (every peer's message at once)


# group()'s results by the identity of the (frozen) hardware and the group's shape
# (`memo.py`): every layout a search times asks for its TP, CP, EP, DP and PP groups on the
# same hardware, and hashing a Hardware (its card a pydantic model) costs more than that.
_GROUPS: memo.Cache = {}
_GROUPS_MAX = 20_000


def group(hw: Hardware, ranks: int, stride: int) -> Group:
    """Ranks `stride` apart (Megatron order: TP innermost, then CP, DP, PP outermost)."""
    key = (id(hw), ranks, stride)
    found: Group | None = memo.cached(_GROUPS, key, hw)
    if found is not None:
        return found
    return memo.keep(_GROUPS, key, hw, _group(hw, ranks, stride), _GROUPS_MAX)


def _group(hw: Hardware, ranks: int, stride: int) -> Group:
    gpn = hw.gpus_per_node
    if ranks <= 1:
        return Group(1, 1, 1, math.inf, 0.0, 0.0, "none")
    per_node = max(1, min(ranks, gpn // stride)) if stride < gpn else 1
    nodes = math.ceil(ranks / per_node)
    return Group(
        ranks,
        per_node,
        nodes,
        hw.group_bus_bytes_per_s(per_node, nodes, stride),
        hw.latency_s(per_node, nodes),
        hw.latency_s(per_node, nodes, allreduce=False),
        hw.link_name(per_node, nodes, stride),
        hw.exchange_latency_s(per_node, nodes),
    )


def expert_copies(arch: Arch, g: Group, node_limited: bool = True) -> tuple[float, float]:
    """(copies of a token sent off the node, copies kept on it) by one dispatch.

    Each of a token's k experts lives on one of the EP group's ranks. Without node-limited
    routing every copy travels on its own: (x − per_node)/x of the k copies leave the node.
    DeepSeek-V3 (§3.2.2) sends a token to at most `routing_node_limit` nodes, once per node
    over InfiniBand, and fans it out to the experts there over NVLink; the distinct nodes k
    uniform picks land on among N are N·(1 − (1 − 1/N)^k). `node_limited=False`: a dispatch
    that writes each copy point to point (DeepSeek-V3 §3.4.2's decoding), whatever the
    routing."""
    k = arch.active_experts
    on_node = k * g.per_node / g.ranks
    if not node_limited or arch.routing_node_limit <= 0 or g.nodes <= 1:
        return k * (g.ranks - g.per_node) / g.ranks, on_node
    n = g.nodes
    distinct = n * (1.0 - (1.0 - 1.0 / n) ** k)
    return min(float(arch.routing_node_limit), distinct) * (n - 1) / n, on_node


def all_to_all_s(
    tokens: float,
    token_bytes: float,
    arch: Arch,
    g: Group,
    hw: Hardware,
    node_limited: bool = True,
) -> float:
    """One dispatch (or combine) of `tokens` hidden states of `token_bytes` each: the copies
    for other nodes over this rank's NIC, the rest over the intra-node link."""
    if g.ranks <= 1 or tokens <= 0:
        return 0.0
    off, on = expert_copies(arch, g, node_limited)
    off_bytes = tokens * off * token_bytes
    on_bytes = tokens * on * token_bytes * (g.per_node - 1) / max(1, g.per_node)
    # An all-to-all touches every pair, so bridged pairs do not carry it (stride 2).
    t_on = on_bytes / hw.intra_bus_bytes_per_s(g.per_node, 2) if g.per_node > 1 else 0.0
    nic = hw.nic_bytes_per_s()
    if off_bytes > 0 and nic <= 0:
        return math.inf
    t_off = off_bytes / nic if off_bytes > 0 else 0.0
    return max(t_on, t_off) + g.exchange_latency
