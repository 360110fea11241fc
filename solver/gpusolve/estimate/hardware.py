"""One server SKU or cloud instance as the physics sees it, and the links its groups use.

A collective's speed is set by the slowest link its ring crosses (nccl-tests PERFORMANCE.md:
"the bus bandwidth should reflect the speed of the hardware bottleneck"):

  * inside a node: NVSwitch gives every GPU its full NVLink rate whatever the group; a
    point-to-point mesh (MI300X Infinity Fabric, Ascend HCCS) gives a group of k GPUs only
    the k − 1 of its gpn − 1 links that reach the others (8 x MI300X all-reduce 313 GB/s,
    2 GPUs 47.7 GB/s: ml-engineering network/README.md); NVLink bridges join pairs only,
    so a larger group runs at the PCIe figure;
  * across nodes: NCCL opens one ring per NIC and each ring leaves the node at a different
    GPU, so a group with k ranks per node gets k NICs' worth (DGX A100, 8 x HDR 200G:
    192 GB/s all-reduce busbw, github.com/NVIDIA/nccl/issues/812), never more than its
    intra-node bus; the site's fabric oversubscription divides what crosses the spine.

Bandwidths here are one direction per GPU, in bytes/s, after the library's efficiency
(`efficiency.LINKS`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpusolve.estimate.efficiency import LINKS, LinkEfficiency, efficiency_of, link_efficiency
from gpusolve.estimate.units import GBIT_BYTES_PER_S
from gpusolve.models.catalog import Card, CloudOffer, Server

# PCIe x16 bidirectional GB/s by generation (catalog-facts: Gen3 ≈ 32, Gen4 ≈ 64, Gen5 ≈ 128).
PCIE_X16_BIDIR_GBS = {3: 32.0, 4: 64.0, 5: 128.0, 6: 256.0}

# NCCL's tuner (NVIDIA/nccl src/graph/tuning.cc @5067397): a ring collective costs a base
# latency plus one hop latency per step; an all-gather or reduce-scatter over n ranks takes
# n − 1 steps, an all-reduce 2(n − 1) (or, as a tree across nodes, 2·(ranks per node − 1)
# intra-node plus 2·log2(nodes) network hops). Large messages run the Simple protocol,
# small ones (decode, < 64 KB) the low-latency LL protocol. Seconds.
SIMPLE = {"base": 8.4e-6, "intra": 3.4e-6, "inter": 14.0e-6, "tree_intra": 4.0e-6}
LOW_LATENCY = {"base": 6.6e-6, "intra": 0.6e-6, "inter": 2.7e-6, "tree_intra": 0.6e-6}
TREE_INTER = {"simple": 14.0e-6, "ll": 5.0e-6}
# Hops over PCIe cost more than over NVLink (the same tuner: PCI ring {LL 1.0, Simple 5.7} µs).
PCIE_HOP = {"simple": 5.7e-6, "ll": 1.0e-6}
PCIE_TOPOLOGIES = frozenset({"pcie", "pcie_switch"})


def pcie_peer_bidir_gbs(card: Card) -> float:
    """Peer bandwidth of a card without a GPU link: half the x16 figure, the cautious
    effective value the shipped servers use (GPUs share switch uplinks and cross sockets)."""
    return PCIE_X16_BIDIR_GBS.get(card.pcie_gen, 32.0) / 2


@dataclass(frozen=True)
class Hardware:
    """One server SKU or cloud instance type."""

    card: Card
    gpus_per_node: int
    intra_node_bandwidth_gbs: float  # per GPU, bidirectional GB/s (NVLink/IF/HCCS, or PCIe)
    inter_node_gbps_per_gpu: float  # per GPU share of the node's fabric, Gbit/s (0 = none)
    storage_write_gbs: float
    label: str = ""  # server or offer id, for messages
    topology: str = "nvswitch"  # servers.yaml GpuTopology
    fabric: str = "infiniband"  # infiniband | roce | ethernet | none
    oversubscription: float = 1.0  # the site fabric's spine oversubscription (1 = non-blocking)

    @classmethod
    def from_server(cls, server: Server, card: Card) -> Hardware:
        return cls(
            card=card,
            gpus_per_node=server.gpus,
            intra_node_bandwidth_gbs=server.peer_bandwidth_gbs,
            inter_node_gbps_per_gpu=(
                0.0 if server.fabric.kind == "none" else server.fabric.total_gbps / server.gpus
            ),
            storage_write_gbs=server.storage_write_gbs,
            label=server.id,
            topology=server.topology,
            fabric=server.fabric.kind,
        )

    @classmethod
    def from_cloud(cls, offer: CloudOffer, card: Card) -> Hardware:
        nics = offer.fabric_nics if offer.fabric_nics is not None else offer.gpus_per_instance
        total_gbps = 0.0 if offer.fabric == "none" else offer.fabric_gbps * nics
        return cls(
            card=card,
            gpus_per_node=offer.gpus_per_instance,
            intra_node_bandwidth_gbs=offer.peer_bandwidth_gbs,
            inter_node_gbps_per_gpu=total_gbps / offer.gpus_per_instance,
            storage_write_gbs=offer.storage_write_gbs,
            label=offer.id,
            topology=_cloud_topology(offer, card),
            fabric=offer.fabric,
        )

    @classmethod
    def generic(cls, card: Card, gpus_per_node: int = 8) -> Hardware:
        """A card with no server in the catalogue: `gpus_per_node` cards on their own peer
        link (or PCIe), no inter-node fabric, NVMe-class 2 GB/s checkpoint storage."""
        return cls(
            card=card,
            gpus_per_node=gpus_per_node,
            intra_node_bandwidth_gbs=card.peer_bandwidth_gbs,
            inter_node_gbps_per_gpu=0.0,
            storage_write_gbs=2.0,
            label=f"{card.id} x{gpus_per_node} (generic)",
            topology=_card_topology(card),
            fabric="none",
        )

    def with_oversubscription(self, ratio: float) -> Hardware:
        return replace(self, oversubscription=max(1.0, ratio))

    # ------------------------------------------------------------------ links

    def _beyond_bridges(self, ranks: int, stride: int = 1) -> bool:
        """NVLink bridges join pairs of neighbours: any other group talks over PCIe."""
        return self.topology == "nvlink_bridge_pairs" and (ranks > 2 or stride > 1)

    def _intra_link(self, ranks: int, stride: int = 1) -> tuple[float, LinkEfficiency]:
        """Raw one-direction bytes/s per GPU and the library's efficiency for a group of
        `ranks` GPUs `stride` apart inside one node."""
        peer = self.intra_node_bandwidth_gbs or pcie_peer_bidir_gbs(self.card)
        pcie = pcie_peer_bidir_gbs(self.card)
        topo = self.topology
        library = efficiency_of(self.card).library
        if self._beyond_bridges(ranks, stride):
            return pcie / 2 * 1e9, link_efficiency("pcie_switch", library)
        if topo == "full_mesh" and self.gpus_per_node > 1:
            share = min(1.0, (max(2, ranks) - 1) / (self.gpus_per_node - 1))
            return peer / 2 * 1e9 * share, link_efficiency("full_mesh", library)
        return peer / 2 * 1e9, link_efficiency(topo, library)

    def intra_bus_bytes_per_s(self, ranks: int, stride: int = 1) -> float:
        raw, eff = self._intra_link(ranks, stride)
        return raw * eff.bus

    def nic_bytes_per_s(self) -> float:
        """One GPU's share of the node's fabric, after the library and the spine."""
        if self.inter_node_gbps_per_gpu <= 0:
            return 0.0
        eff = LINKS.get(self.fabric, LINKS["ethernet"])
        return self.inter_node_gbps_per_gpu * GBIT_BYTES_PER_S * eff.bus / self.oversubscription

    def group_bus_bytes_per_s(self, ranks_per_node: int, nodes: int, stride: int = 1) -> float:
        """Bus bandwidth of a ring over `nodes` nodes with `ranks_per_node` ranks in each,
        `stride` GPUs apart."""
        intra = (
            self.intra_bus_bytes_per_s(ranks_per_node, stride) if ranks_per_node > 1 else math.inf
        )
        if nodes <= 1:
            return intra
        return min(intra, max(1, ranks_per_node) * self.nic_bytes_per_s())

    def latency_s(
        self, ranks_per_node: int, nodes: int, *, allreduce: bool = True, small: bool = False
    ) -> float:
        """Start-up latency of one collective over `nodes` × `ranks_per_node` ranks (NCCL's
        own tuner model): rings for all-gather and reduce-scatter, the cheaper of a ring and a
        tree for all-reduce."""
        c = dict(LOW_LATENCY if small else SIMPLE)
        if self.topology in PCIE_TOPOLOGIES or self._beyond_bridges(ranks_per_node):
            c["intra"] = c["tree_intra"] = PCIE_HOP["ll" if small else "simple"]
        ranks = max(1, ranks_per_node) * max(1, nodes)
        if ranks <= 1:
            return 0.0
        steps, inter_steps = ranks - 1, nodes - 1
        if allreduce:
            steps, inter_steps = 2 * steps, 2 * inter_steps
        ring = c["base"] + (steps - inter_steps) * c["intra"] + inter_steps * c["inter"]
        if not allreduce or nodes <= 1:
            return ring
        tree_inter = TREE_INTER["ll" if small else "simple"]
        tree = c["base"] + 2 * (
            (ranks_per_node - 1) * c["tree_intra"] + math.log2(nodes) * tree_inter
        )
        return min(ring, tree)

    def exchange_latency_s(self, ranks_per_node: int, nodes: int) -> float:
        """Start-up latency of one all-to-all: it posts every peer's message at once (NCCL's
        alltoall is grouped send/recv; DeepEP's kernels write each peer from warps of their
        own), so it pays one message's start-up, NCCL's tuner base and one hop on each link
        it crosses, not a ring's ranks − 1 steps."""
        if ranks_per_node * nodes <= 1:
            return 0.0
        c = dict(SIMPLE)
        if self.topology in PCIE_TOPOLOGIES or self._beyond_bridges(ranks_per_node):
            c["intra"] = PCIE_HOP["simple"]
        intra = c["intra"] if ranks_per_node > 1 else 0.0
        return c["base"] + intra + (c["inter"] if nodes > 1 else 0.0)

    def link_name(self, ranks_per_node: int, nodes: int, stride: int = 1) -> str:
        if nodes > 1:
            return f"{self.fabric} fabric"
        if self._beyond_bridges(ranks_per_node, stride):
            return "PCIe (bridges join pairs only)"
        return {
            "nvswitch": "NVLink/NVSwitch",
            "full_mesh": "the GPU mesh",
            "nvlink_bridge_pairs": "NVLink bridge",
            "pcie_switch": "PCIe switch",
            "pcie": "PCIe",
        }.get(self.topology, "the intra-node link")


def _card_topology(card: Card) -> str:
    return {
        "nvlink": "nvswitch",
        "nvlink_bridge": "nvlink_bridge_pairs",
        "infinity_fabric": "full_mesh",
        "hccs": "full_mesh",
    }.get(card.peer_link, "pcie")


def _cloud_topology(offer: CloudOffer, card: Card) -> str:
    if offer.peer_bandwidth_gbs <= 0:
        return "pcie"
    if card.peer_link == "nvlink" and offer.gpus_per_instance >= 4:
        return "nvswitch"
    return _card_topology(card)
