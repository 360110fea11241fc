"""What one training step is timed from, and what it comes to.

`StepShape` is the flat, hashable description of one step (`trainshape.step_shape` builds it
from a workload, its layout and the hardware); `Framework` says how the software runs it (what
overlaps what; `Params` sets these); `StepBreakdown` is the step's parts, which `steptime`
returns so that MFU and HFU are results, not inputs.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Framework:
    """How the software runs the step (what overlaps what); `Params` sets these."""

    dp_comm_overlap: bool = True
    tp_comm_overlap: str = "none"  # none | backward | full
    ep_comm_overlap: bool = False
    pp_scatter_gather: bool = True


@dataclass(frozen=True)
class StepShape:
    """Everything the step time depends on, flat and hashable (memoised per search)."""

    tokens_per_micro: int  # M = b·s/c
    seq: int
    micro_batch: int
    grad_accum: int
    tp: int
    pp: int
    vp: int
    cp: int
    dp: int
    ep: int
    sequence_parallel: bool
    sharding: str
    zero_stage: int
    checkpointing: str
    flash_attention: bool
    dropout: bool  # hidden and attention dropout (GPT-3-era recipes: 0.1; Llama-era: none)
    frozen_base: bool  # LoRA/QLoRA: no weight gradients for the base
    qlora: bool  # 4-bit base dequantised before each GEMM pass
    adapter_params_per_layer: float  # LoRA adapters (trained), per layer, whole model
    act_bytes: float  # activation element size
    gemm_format: str  # bf16 | fp16 | fp8 | tf32: what the GEMMs run in
    gemm_peak: float  # FLOP/s of the GEMMs' format
    attention_peak: float  # FLOP/s of attention (16-bit even under FP8 GEMMs)
    grad_bytes: float  # per trained parameter in the reduction
    weight_bytes: float  # per trained parameter gathered (ZeRO-3) or broadcast (ZeRO-1/2)
    frozen_weight_bytes: float  # per frozen (LoRA base) parameter ZeRO-3/FSDP still gathers
    optimizer_bytes: float  # optimizer state per trained parameter (master + moments)
    trained_dense: float  # trained parameters outside experts (whole model)
    trained_expert: float  # trained expert parameters (whole model)
    # Transformer layers per pipeline rank (pipeline.py; empty: ceil(L/p) on every rank) and
    # whether the last rank, which holds the LM head, is the one listed last.
    stage_layers: tuple[int, ...] = ()
    schedule: str = "1f1b"  # 1f1b | interleaved | dualpipe
    offload_optimizer: bool = False  # optimizer states and update on the host
    host_bytes_per_s: float = 0.0  # host link per GPU, one direction (offload)
    mtp_depth: int = 0  # multi-token prediction modules beside the head (DeepSeek-V3 §2.2)
    stack: str = "megatron"  # the training code (stacks.py): what it streams beyond fused
    adapted_share: float = 0.0  # LoRA adapters as a share of an all-Linear LoRA of that rank


@dataclass(frozen=True)
class StepBreakdown:
    """Seconds per optimizer step on the slowest GPU, by cause; `step_s` is their sum."""

    compute_s: float  # GEMMs, attention and streaming kernels, no recomputation
    recompute_s: float
    tp_comm_s: float  # exposed tensor-parallel collectives
    cp_comm_s: float
    ep_comm_s: float
    pp_comm_s: float
    bubble_s: float
    dp_comm_s: float  # exposed data-parallel traffic
    optimizer_s: float
    dp_comm_total_s: float  # before overlap (what the links carry)
    recompute_flops: float  # per step per GPU
    dp_link: str  # the link the DP group's ring is bounded by
    tp_link: str
    pp_link: str
    ep_link: str

    @property
    def step_s(self) -> float:
        return sum(self.parts().values())

    @property
    def communication_s(self) -> float:
        """Exposed communication of every kind (the bubble is not communication)."""
        return self.tp_comm_s + self.cp_comm_s + self.ep_comm_s + self.pp_comm_s + self.dp_comm_s

    def parts(self) -> dict[str, float]:
        return {
            "compute": self.compute_s,
            "recompute": self.recompute_s,
            "tp_comm": self.tp_comm_s,
            "cp_comm": self.cp_comm_s,
            "ep_comm": self.ep_comm_s,
            "pp_comm": self.pp_comm_s,
            "bubble": self.bubble_s,
            "dp_comm": self.dp_comm_s,
            "optimizer": self.optimizer_s,
        }
