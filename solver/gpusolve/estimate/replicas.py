"""Serving replica shapes: how many GPUs a replica's pipeline stage spans, how many stages,
and for an MoE model how the stage's ranks share its experts and its attention; the
shapes the layout searches try, aggregated and in each disaggregated pool."""

from __future__ import annotations

from typing import NamedTuple

from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.layout import Layout
from gpusolve.estimate.moeserve import moe_splits
from gpusolve.estimate.serving import serving_layout
from gpusolve.estimate.shapes import Arch

# TP degrees inside a server (H08): powers of two up to a server's GPUs.
SERVER_TP = (1, 2, 4, 8, 16)


class ReplicaShape(NamedTuple):
    """One serving replica's shape: `tp` ranks a pipeline stage, `pp` stages; an MoE
    replica may hold whole experts on each rank (`ep` = tp) and attend data-parallel over
    them (`attention_dp`), moeserve.py."""

    tp: int
    pp: int = 1
    ep: int = 1
    attention_dp: bool = False

    @property
    def split(self) -> tuple[int, int]:
        return self.tp, self.pp

    @property
    def moe(self) -> tuple[int, bool]:
        return self.ep, self.attention_dp

    @property
    def label(self) -> str:
        moe = f" EP{self.ep}" if self.ep > 1 else ""
        return f"TP{self.tp} PP{self.pp}{moe}" + (" attention-DP" if self.attention_dp else "")

    def layout(self, gpus_per_node: int, **batches: int | None) -> Layout:
        """This shape as a serving layout (`micro_batch`, `replicas`, `sequences`)."""
        return serving_layout(
            self.tp,
            self.pp,
            gpus_per_node,
            ep=self.ep,
            attention_dp=self.attention_dp,
            **batches,  # type: ignore[arg-type]
        )


def replica_shapes(arch: Arch, hw: Hardware, limit: int) -> list[ReplicaShape]:
    """Replica shapes to try, smallest first: TP 1, 2, 4, 8 inside a server; for an MoE
    model, each TP degree also with whole experts a rank and with attention data-parallel
    too (moeserve.moe_splits), the latter also over 2, 4, ... servers (expert-parallel
    decode across nodes, its dispatch and combine on the fabric); then a full server's TP
    pipelined over servers. A replica larger than a server needs a fabric (replicas of one
    server each need none, they are independent)."""
    gpn = hw.gpus_per_node
    tps = [tp for tp in SERVER_TP if tp <= gpn and gpn % tp == 0]
    span_limit = limit if hw.inter_node_gbps_per_gpu > 0 else 1
    shapes = [
        ReplicaShape(tp, 1, ep, adp)
        for tp in tps
        for ep, adp in moe_splits(arch, tp, gpn)
        if adp or arch.heads % tp == 0
    ]
    servers = 2
    while arch.is_moe and servers <= span_limit and gpn * servers <= arch.experts:
        shapes += [
            ReplicaShape(gpn * servers, 1, ep, adp)
            for ep, adp in moe_splits(arch, gpn * servers, gpn)
        ]
        servers *= 2
    sliced = [s.tp for s in shapes if not s.attention_dp and s.tp <= gpn]
    top_tp = sliced[-1] if sliced else 1
    pp = 2
    while pp <= min(gpn * span_limit, arch.layers) and top_tp * pp <= gpn * span_limit:
        shapes.append(ReplicaShape(top_tp, pp))
        pp *= 2
    return shapes
