"""MoE layers as serving engines run them: the routed experts apart from the rest of the step.

A step's M tokens pass each MoE layer through a router GEMM and a top-k kernel, are sorted by
expert, and meet their experts' weights in one grouped GEMM launch whose grid covers every
touched expert's row blocks (vLLM fused_moe.py: `fused_topk`, `moe_align_block_size`,
`fused_experts` with grid cdiv(EM, BLOCK_SIZE_M) × cdiv(N, BLOCK_SIZE_N), each row block's
expert read from `expert_ids`; SGLang's fused_moe_triton is adapted from it; TensorRT-LLM's
CUTLASS MoE GEMM groups the same way). So:
  touched experts  each token picks k of E experts, independently of the others: a share
                   1 − (1 − k/E)^M of the experts is touched and has its weights streamed
  rows per expert  the touched experts share the M·k (token, expert) rows: M·k / (E·touched)
                   each, the M of every expert's GEMM; the kernel streams all touched experts'
                   weights once, so it runs as a decode-shaped GEMM of that many rows over a
                   layer of the touched experts' size (`decode_rates.measured_for`)
  expanded rows    the (token, expert) rows are written and read once more than a dense MLP's
                   rows: vLLM and SGLang write k 16-bit rows of hidden from the second GEMM and
                   add them in `moe_sum`; TensorRT-LLM adds in the GEMM's epilogue (fused
                   finalize) but first copies each token into k permuted rows of activations
                   (`expandInputRowsKernel`, cutlass_kernels/moe_gemm/moe_kernels.cu)
  kernels          four more per MoE layer than a dense MLP: router GEMM, top-k, align
                   (permute), sum (finalize)
Expert parallelism (`Layout.ep` = the replica's TP ranks): each rank holds E/ep whole experts
instead of a 1/tp slice of every expert; the bytes and FLOPs per rank are the same, the
per-expert GEMMs are wider. With attention data-parallel (`Layout.attention_dp`, TensorRT-LLM
`enable_attention_dp`, SGLang `--enable-dp-attention`, DeepSeek-V3's decode deployment) each
rank runs attention on its own sequences with whole attention weights and its own KV cache
("All GEMM weights are replicated ... The KV-cache is partitioned", TensorRT-LLM docs,
features/parallel-strategy.md, Data Parallelism); the tokens then travel to their experts'
ranks and back (dispatch and combine, an all-to-all over the EP group, `collectives.
all_to_all_s`, across nodes where the group spans them) instead of two TP all-reduces a layer.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusolve.estimate.collectives import all_to_all_s, group
from gpusolve.estimate.compute import EIGHT_BIT
from gpusolve.estimate.hardware import Hardware
from gpusolve.estimate.layout import Layout
from gpusolve.estimate.shapes import Arch

# Kernels an MoE layer runs beyond a dense MLP's: router GEMM, top-k softmax, align/permute,
# sum/finalize (vLLM fused_moe.py `fused_topk`, `fused_experts_impl`).
MOE_EXTRA_KERNELS = 4
# With attention data-parallel: the dispatch and the combine.
DISPATCH_KERNELS = 2


@dataclass(frozen=True)
class ExpertSplit:
    """How one stage's GPUs share an MoE layer."""

    ranks: int  # GPUs of one pipeline stage (the replica's TP degree)
    whole_experts: bool  # expert-parallel: E/ranks whole experts a rank, else 1/ranks of each
    attention_dp: bool  # each rank attends its own sequences with whole attention weights

    @property
    def attention_ranks(self) -> int:
        """Ranks one sequence's attention is split over (1 under attention DP)."""
        return 1 if self.attention_dp else self.ranks

    @property
    def sequence_share(self) -> float:
        """Share of the stage's sequences one rank attends."""
        return 1.0 / self.ranks if self.attention_dp else 1.0


def split_of(layout: Layout) -> ExpertSplit:
    return ExpertSplit(layout.tp, layout.ep > 1, layout.attention_dp)


def check_split(arch: Arch, layout: Layout) -> str | None:
    """Why this serving layout cannot run, or None: expert parallelism spans the stage's TP
    ranks and needs experts to spread; attention DP only comes with it."""
    if layout.ep > 1 and not arch.is_moe:
        return "expert parallelism needs an MoE model"
    if layout.ep > 1 and layout.ep != layout.tp:
        return f"EP{layout.ep} must equal the replica's TP{layout.tp} (experts over its ranks)"
    if layout.ep > 1 and arch.experts % layout.ep:
        return f"{arch.experts} experts do not spread evenly over EP{layout.ep}"
    if layout.attention_dp and layout.ep <= 1:
        return "attention data-parallel needs expert parallelism over the same ranks"
    return None


def moe_splits(arch: Arch, ranks: int, gpus_per_node: int) -> list[tuple[int, bool]]:
    """How a stage of `ranks` GPUs may share an MoE layer, as (ep, attention_dp): experts
    sliced over the ranks under TP attention (every engine's default), whole experts a rank
    under TP attention, whole experts under attention data-parallel. TP attention stays
    inside a server (H08); attention DP's dispatch and combine may cross the fabric, as
    DeepSeek-V3's decode deployment does (arXiv:2412.19437 §3.4.2: EP320 over 40 nodes).
    Inside a server attention DP is offered for MLA models only, where the engines advise
    it ("particularly those like DeepSeek that employ MLA", vLLM
    docs/serving/data_parallel_deployment.md: MLA's one latent cannot be split by heads, so
    TP attention keeps it whole on every rank); a GQA model inside a server attends under TP,
    the layout the held-out TensorRT-LLM MoE rows ran. A dense model, or experts that do not
    spread evenly: sliced only."""
    inside = ranks <= gpus_per_node
    out = [(1, False)] if inside else []
    if arch.is_moe and ranks > 1 and arch.experts % ranks == 0:
        if inside:
            out.append((ranks, False))
        if arch.is_mla or not inside:
            out.append((ranks, True))
    return out


def touched_share(arch: Arch, rows: float) -> float:
    """Share of the routed experts `rows` tokens touch, each picking k of E at random."""
    if not arch.is_moe or rows <= 0:
        return 0.0
    return float(1.0 - (1.0 - arch.active_experts / arch.experts) ** rows)


def rows_per_expert(arch: Arch, rows: float) -> float:
    """The M of each touched expert's GEMM: the step's (token, expert) rows over the touched
    experts (at least one row)."""
    touched = touched_share(arch, rows)
    if touched <= 0:
        return 1.0
    return max(1.0, rows * arch.active_experts / (arch.experts * touched))


def routed_active_params(arch: Arch) -> float:
    """Routed-expert parameters one token's forward multiplies (k of E experts' share)."""
    if not arch.is_moe:
        return 0.0
    return arch.expert_params * arch.active_experts / arch.experts


def expert_layer_params(arch: Arch, ranks: int) -> float:
    """One MoE layer's routed-expert parameters on one rank (all E experts' share)."""
    matrices = 3 if arch.gated_ffn else 2
    return matrices * arch.hidden * arch.expert_width * arch.experts / max(1, ranks)


def expanded_row_bytes(fused_finalize: bool, fmt: str) -> float:
    """Bytes per (token, expert) row and hidden element beyond a dense MLP: written once and
    read once. Without a fused finalize the second GEMM writes 16-bit rows that `moe_sum`
    reads back; with one, the expanded activations (at the GEMM's input width) are."""
    act = 1.0 if fmt in EIGHT_BIT else 2.0
    return 2.0 * (act if fused_finalize else 2.0)


def expanded_rows_s(
    arch: Arch, split: ExpertSplit, rows: float, moe_layers: float, row_bytes: float, bw: float
) -> float:
    """One stage's expanded-row traffic on one rank: a rank that holds whole experts moves
    only the rows routed to it; a TP-sliced rank moves every token's k rows."""
    if not arch.is_moe or rows <= 0:
        return 0.0
    share = 1.0 / split.ranks if split.whole_experts else 1.0
    expanded = rows * arch.active_experts * share
    return moe_layers * expanded * arch.hidden * row_bytes / bw


def dispatch_s(
    arch: Arch, hw: Hardware, split: ExpertSplit, rows: float, moe_layers: float, fmt: str
) -> float:
    """Attention DP's dispatch and combine over one stage's MoE layers: each rank sends its
    own rows/ranks tokens to their experts' ranks (at the expert GEMM's input width: 8-bit
    where the experts run 8-bit, as DeepEP and TensorRT-LLM dispatch) and gets 16-bit results
    back."""
    if not split.attention_dp or rows <= 0:
        return 0.0
    out, back = exchange_s(arch, hw, split.ranks, rows / split.ranks, fmt)
    return moe_layers * (out + back)


def exchange_s(
    arch: Arch, hw: Hardware, ranks: int, tokens: float, fmt: str
) -> tuple[float, float]:
    """(dispatch, combine) seconds of one MoE layer for `tokens` tokens a rank over an EP
    group of `ranks`: each of a token's k copies written point to point to its expert's
    rank, as DeepSeek-V3 decodes ("direct point-to-point transfers over IB", arXiv:2412.19437
    §3.4.2) and DeepEP's low-latency kernels do, so node-limited routing saves nothing here."""
    g = group(hw, ranks, 1)
    act = 1.0 if fmt in EIGHT_BIT else 2.0
    out = all_to_all_s(tokens, arch.hidden * act, arch, g, hw, node_limited=False)
    back = all_to_all_s(tokens, arch.hidden * 2.0, arch, g, hw, node_limited=False)
    return out, back
