"""Communication per training step, from bytes and the slowest link a group crosses.

Ring collectives (Patarasuk & Yuan 2009; NCCL): an all-reduce of M bytes over n ranks
moves 2·(n−1)/n·M per rank; a reduce-scatter or all-gather (n−1)/n·M. Volumes per
sharding (Rajbhandari et al. 2020, §7): DDP and ZeRO-1/2 move 2Ψ per step (ZeRO-2 as a
reduce-scatter every micro-batch and one all-gather of updated parameters), ZeRO-3 and
FSDP 3Ψ per micro-batch (all-gather for forward and backward, reduce-scatter of
gradients); FSDP hybrid does that inside a node and all-reduces its shard across nodes.
Tensor parallelism all-reduces the activations twice per layer forward and twice backward
(Megatron-LM; the same volume as sequence parallelism's all-gather + reduce-scatter) and
sits on the critical path; pipeline parallelism sends one activation tensor per stage
boundary each way (H08). Data-parallel traffic overlaps backward compute by
`Params.comm_overlap`; the rest is exposed.

Rank order is Megatron's: tensor parallel innermost, then data (expert) parallel, then
pipeline outermost, so a group stays inside a node while its span fits in one.
Bandwidths are one direction per GPU (bidirectional datasheet figures halved).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusolve.estimate.memory import SHARDING_STAGE, Parallel
from gpusolve.estimate.shapes import Arch, layers_per_stage


@dataclass(frozen=True)
class Links:
    """Per-GPU one-direction bandwidths, bytes/s."""

    intra_bytes_per_s: float
    inter_bytes_per_s: float  # 0 = no inter-node fabric


def ring_allreduce_s(nbytes: float, ranks: int, bandwidth_bytes_per_s: float) -> float:
    if ranks <= 1 or nbytes <= 0:
        return 0.0
    return 2.0 * (ranks - 1) / ranks * nbytes / bandwidth_bytes_per_s


def ring_allgather_s(nbytes: float, ranks: int, bandwidth_bytes_per_s: float) -> float:
    """All-gather (or reduce-scatter) of a tensor whose full size is `nbytes`."""
    if ranks <= 1 or nbytes <= 0:
        return 0.0
    return (ranks - 1) / ranks * nbytes / bandwidth_bytes_per_s


@dataclass(frozen=True)
class StepComm:
    """Communication seconds per optimizer step on one GPU."""

    data_parallel_s: float
    tensor_parallel_s: float
    pipeline_s: float
    expert_parallel_s: float
    exposed_s: float
    data_parallel_link: str  # "intra" | "inter" | "none"

    @property
    def total_s(self) -> float:
        return (
            self.data_parallel_s + self.tensor_parallel_s + self.pipeline_s + self.expert_parallel_s
        )


def _link(span: int, gpus_per_node: int, links: Links) -> tuple[str, float]:
    if span <= gpus_per_node:
        return "intra", links.intra_bytes_per_s
    return "inter", links.inter_bytes_per_s


def hybrid_shard_group(par: Parallel, gpus_per_node: int) -> int:
    """FSDP hybrid: the data-parallel ranks that live in one node."""
    return max(1, min(par.dp, gpus_per_node // max(1, par.tp)))


def training_comm(
    arch: Arch,
    *,
    par: Parallel,
    gpus_per_node: int,
    seq: int,
    micro_batch: int,
    grad_accum: int,
    checkpointing: str,
    trainable_dense: float,
    trainable_expert: float,
    grad_bytes: float,
    weight_bytes_trainable: float,
    weight_bytes_frozen: float,
    links: Links,
    overlap: float,
    act_bytes: float = 2.0,
) -> StepComm:
    """Seconds of communication per optimizer step (`grad_accum` micro-batches).

    `trainable_*` are parameter counts of the whole model (divided here by TP × PP and EP);
    `weight_bytes_frozen` is the per-parameter size of frozen weights (LoRA bases), which
    ZeRO-3/FSDP still gather.
    """
    mp = par.tp * par.pp
    ep = max(1, par.ep)
    stage = SHARDING_STAGE[par.sharding]
    frozen_dense = max(0.0, arch.dense_params - trainable_dense)
    frozen_expert = max(0.0, arch.expert_params - trainable_expert)

    def groups() -> list[tuple[float, float, int]]:
        """(gradient bytes, weight bytes, ranks) of the dense and the expert shards."""
        dense_w = trainable_dense * weight_bytes_trainable + frozen_dense * weight_bytes_frozen
        expert_w = trainable_expert * weight_bytes_trainable + frozen_expert * weight_bytes_frozen
        out = [(trainable_dense * grad_bytes / mp, dense_w / mp, par.dp)]
        if arch.expert_params > 0:
            out.append(
                (trainable_expert * grad_bytes / (mp * ep), expert_w / (mp * ep), par.dp // ep)
            )
        return out

    dp_link, dp_bw = _link(par.tp * par.dp, gpus_per_node, links)
    if par.dp <= 1:
        dp_link = "none"
    dp_s = 0.0
    if par.dp > 1 and dp_bw > 0:
        for grads, weights, ranks in groups():
            trained_w = grads / grad_bytes * weight_bytes_trainable if grad_bytes else 0.0
            if stage <= 1:
                dp_s += ring_allreduce_s(grads, ranks, dp_bw)
            elif stage == 2:
                dp_s += grad_accum * ring_allgather_s(grads, ranks, dp_bw)
                dp_s += ring_allgather_s(trained_w, ranks, dp_bw)
            elif par.sharding == "fsdp_hybrid":
                group = min(ranks, hybrid_shard_group(par, gpus_per_node))
                intra = links.intra_bytes_per_s
                dp_s += grad_accum * (
                    2 * ring_allgather_s(weights, group, intra)
                    + ring_allgather_s(grads, group, intra)
                )
                replicas = max(1, ranks // group)
                _, across_bw = _link(par.tp * par.dp, gpus_per_node, links)
                dp_s += ring_allreduce_s(grads / group, replicas, across_bw or intra)
            else:
                dp_s += grad_accum * (
                    2 * ring_allgather_s(weights, ranks, dp_bw)
                    + ring_allgather_s(grads, ranks, dp_bw)
                )
    elif par.dp > 1:
        dp_s = float("inf")

    activation = float(micro_batch) * seq * arch.hidden * act_bytes
    stage_layers = layers_per_stage(arch, par.pp)
    tp_s = 0.0
    if par.tp > 1:
        _, tp_bw = _link(par.tp, gpus_per_node, links)
        allreduces = 4 + (2 if checkpointing == "full" else 0)
        per = ring_allreduce_s(activation, par.tp, tp_bw) if tp_bw > 0 else float("inf")
        tp_s = grad_accum * stage_layers * allreduces * per

    pp_s = 0.0
    if par.pp > 1:
        _, pp_bw = _link(par.tp * par.dp * par.pp, gpus_per_node, links)
        # Megatron with SP sends the activation sharded over the TP ranks.
        boundary = activation / (par.tp if par.sequence_parallel else 1)
        pp_s = grad_accum * 2 * boundary / pp_bw if pp_bw > 0 else float("inf")

    ep_s = 0.0
    if ep > 1 and arch.is_moe:
        _, ep_bw = _link(par.tp * ep, gpus_per_node, links)
        routed = activation * arch.active_experts * (ep - 1) / ep / par.tp
        ep_s = grad_accum * stage_layers * 4 * routed / ep_bw if ep_bw > 0 else float("inf")

    exposed = dp_s * (1.0 - overlap) + tp_s + pp_s + ep_s
    return StepComm(dp_s, tp_s, pp_s, ep_s, exposed, dp_link)
