"""The PyTorch side of `gpusolve measure` (imported only when a measurement runs).

A decoder-only transformer built from the physics' own `Arch`, so that its parameters are
the ones `shapes.count_params` counts: token embedding (plus learned positions where the
shape has them), per layer an RMSNorm, Q/K/V/O projections without biases (grouped-query K
and V), an RMSNorm and a GeLU (2 matrices) or SwiGLU (3) MLP, a final RMSNorm and an LM head
unless tied. Attention is `scaled_dot_product_attention` (causal; FlashAttention-class
kernels where the device has them); rotary embeddings are left out (no parameters, a few
streaming FLOPs).

Mixed precision keeps Megatron-LM's arrangement, the one the physics counts
(memory.full_training_state_bytes): 16-bit weights in the model, an fp32 master copy and the
optimizer's moments beside it, and gradients in fp32 buffers (convention 18) or in the
weights' 16-bit `.grad` (convention 16). fp32 training keeps fp32 weights and gradients and
the moments. Model-state bytes are counted from those tensors (the optimizer's per-tensor
scalar `step` counters are not model states and are left out).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from gpusolve.estimate.memory import is_fp32_training
from gpusolve.estimate.shapes import Arch

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


class RMSNorm(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        var = x.pow(2).mean(-1, keepdim=True)
        return x * torch.rsqrt(var + 1e-6) * self.weight


class Attention(nn.Module):
    def __init__(self, arch: Arch, dropout: float) -> None:
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = arch.heads, arch.kv_heads, arch.head_dim
        h, d = arch.hidden, arch.head_dim
        self.q = nn.Linear(h, arch.heads * d, bias=False)
        self.k = nn.Linear(h, arch.kv_heads * d, bias=False)
        self.v = nn.Linear(h, arch.kv_heads * d, bias=False)
        self.o = nn.Linear(arch.heads * d, h, bias=False)
        self.dropout = dropout
        self.recompute_core = False

    def core(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        if self.kv_heads != self.heads:
            k = k.repeat_interleave(self.heads // self.kv_heads, dim=1)
            v = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
        p = self.dropout if self.training else 0.0
        out: torch.Tensor = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=p)
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q = self.q(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        if self.recompute_core:
            out = checkpoint(self.core, q, k, v, use_reentrant=False)
        else:
            out = self.core(q, k, v)
        result: torch.Tensor = self.o(out.transpose(1, 2).reshape(b, s, self.heads * self.head_dim))
        return result


class Mlp(nn.Module):
    def __init__(self, arch: Arch) -> None:
        super().__init__()
        self.gated = arch.gated_ffn
        self.up = nn.Linear(arch.hidden, arch.ffn, bias=False)
        self.gate = nn.Linear(arch.hidden, arch.ffn, bias=False) if arch.gated_ffn else None
        self.down = nn.Linear(arch.ffn, arch.hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inner = F.silu(self.gate(x)) * self.up(x) if self.gate is not None else F.gelu(self.up(x))
        out: torch.Tensor = self.down(inner)
        return out


class Block(nn.Module):
    def __init__(self, arch: Arch, dropout: float) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(arch.hidden)
        self.attn = Attention(arch, dropout)
        self.mlp_norm = RMSNorm(arch.hidden)
        self.mlp = Mlp(arch)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.drop(self.attn(self.attn_norm(x)))
        out: torch.Tensor = x + self.drop(self.mlp(self.mlp_norm(x)))
        return out


class Decoder(nn.Module):
    def __init__(self, arch: Arch, *, dropout: float, checkpointing: str) -> None:
        super().__init__()
        self.embed = nn.Embedding(arch.vocab, arch.hidden)
        positions = round((arch.input_embedding_params - arch.vocab * arch.hidden) / arch.hidden)
        self.pos = nn.Embedding(positions, arch.hidden) if positions > 0 else None
        blocks = [Block(arch, dropout) for _ in range(arch.layers)]
        for blk in blocks:
            blk.attn.recompute_core = checkpointing == "selective"
        self.blocks = nn.ModuleList(blocks)
        self.norm = RMSNorm(arch.hidden)
        self.head = None if _tied(arch) else nn.Linear(arch.hidden, arch.vocab, bias=False)
        self.full_recompute = checkpointing == "full"

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        if self.pos is not None:
            x = x + self.pos(torch.arange(tokens.shape[1], device=tokens.device))
        for blk in self.blocks:
            x = checkpoint(blk, x, use_reentrant=False) if self.full_recompute else blk(x)
        x = self.norm(x)
        weight = self.embed.weight if self.head is None else self.head.weight
        return F.linear(x, weight)


def _tied(arch: Arch) -> bool:
    """The shape ties its LM head when its embedding parameters hold one vocab x hidden table
    (count_params: input tables + head unless tied + the final norm)."""
    head = arch.embedding_params - arch.input_embedding_params - arch.hidden
    return head < arch.vocab * arch.hidden / 2


@dataclass(frozen=True)
class RunConfig:
    precision: str
    optimizer: str
    convention: int
    micro_batch: int
    seq_len: int
    checkpointing: str
    dropout: bool
    steps: int
    warmup: int
    device: str
    seed: int = 0


@dataclass(frozen=True)
class RunResult:
    params: int
    step_s: float
    weights_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    saved_activation_bytes: int
    peak_allocated_bytes: int | None
    peak_reserved_bytes: int | None
    device_name: str


def _bytes(tensors: Any) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


class _SavedBytes:
    """Counts the bytes autograd saves for backward (each storage once)."""

    def __init__(self) -> None:
        self.seen: set[tuple[int, int]] = set()
        self.total = 0
        self.skip: set[int] = set()

    def pack(self, t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        key = (storage.data_ptr(), storage.nbytes())
        if key not in self.seen and storage.data_ptr() not in self.skip:
            self.seen.add(key)
            self.total += storage.nbytes()
        return t


def run(arch: Arch, cfg: RunConfig) -> RunResult:
    """Build the model, run warm-up plus timed steps, count the tensors."""
    torch.manual_seed(cfg.seed)
    device = torch.device(cfg.device)
    fp32 = is_fp32_training(cfg.precision, cfg.optimizer)
    dtype = torch.float32 if fp32 else DTYPES.get(cfg.precision, torch.bfloat16)
    with device:  # initialise on the device: a multi-billion model is slow to build on the host
        model = Decoder(arch, dropout=0.1 if cfg.dropout else 0.0, checkpointing=cfg.checkpointing)
    model = model.to(dtype=dtype)
    params: list[torch.Tensor] = list(model.parameters())
    if fp32:
        masters: list[torch.Tensor] = params
        main_grads: list[torch.Tensor] | None = None
    else:
        masters = [p.detach().float().clone().requires_grad_(True) for p in params]
        main_grads = [torch.zeros_like(m) for m in masters] if cfg.convention == 18 else None
    opt = _optimizer(cfg.optimizer, masters)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)

    def batch() -> tuple[torch.Tensor, torch.Tensor]:
        t = torch.randint(0, arch.vocab, (cfg.micro_batch, cfg.seq_len + 1), device=device)
        return t[:, :-1], t[:, 1:]

    saved = _SavedBytes()
    saved.skip = {p.untyped_storage().data_ptr() for p in params}

    def step(count_saved: bool) -> None:
        x, y = batch()
        if count_saved:
            with torch.autograd.graph.saved_tensors_hooks(saved.pack, lambda t: t):
                loss = _loss(model, x, y, arch.vocab)
        else:
            loss = _loss(model, x, y, arch.vocab)
        torch.autograd.backward(loss)
        if not fp32:
            for p, m, i in zip(params, masters, range(len(params)), strict=True):
                assert p.grad is not None
                if main_grads is not None:
                    main_grads[i].add_(p.grad.float())
                    p.grad = None
                    m.grad = main_grads[i]
                else:
                    m.grad = p.grad.float()
        opt.step()
        if not fp32:
            with torch.no_grad():
                for p, m in zip(params, masters, strict=True):
                    p.copy_(m)

    def reset_grads() -> None:
        if main_grads is not None:
            for g in main_grads:
                g.zero_()
        for p in params:
            if p.grad is not None:
                p.grad.zero_()
        for m in masters:
            if m is not None and main_grads is None and not fp32:
                m.grad = None

    step(count_saved=True)
    states = _state_bytes(params, masters, main_grads, opt, fp32)
    reset_grads()
    for _ in range(max(0, cfg.warmup - 1)):
        step(count_saved=False)
        reset_grads()
    _sync(device)
    start = time.perf_counter()
    for _ in range(cfg.steps):
        step(count_saved=False)
        reset_grads()
    _sync(device)
    elapsed = time.perf_counter() - start
    peak_alloc = peak_res = None
    name = "cpu"
    if device.type == "cuda":
        peak_alloc = int(torch.cuda.max_memory_allocated(device))
        peak_res = int(torch.cuda.max_memory_reserved(device))
        name = torch.cuda.get_device_name(device)
    return RunResult(
        params=sum(p.numel() for p in params),
        step_s=elapsed / max(1, cfg.steps),
        weights_bytes=states[0],
        gradients_bytes=states[1],
        optimizer_bytes=states[2],
        saved_activation_bytes=saved.total,
        peak_allocated_bytes=peak_alloc,
        peak_reserved_bytes=peak_res,
        device_name=name,
    )


def _loss(model: nn.Module, x: torch.Tensor, y: torch.Tensor, vocab: int) -> torch.Tensor:
    """Cross-entropy in fp32 over the logits (what Megatron's fused loss keeps, too)."""
    logits = model(x)
    return F.cross_entropy(logits.float().view(-1, vocab), y.reshape(-1))


def _state_bytes(
    params: list[torch.Tensor],
    masters: list[torch.Tensor],
    main_grads: list[torch.Tensor] | None,
    opt: torch.optim.Optimizer,
    fp32: bool,
) -> tuple[int, int, int]:
    """(weights, gradients, optimizer) bytes held after a step, before gradients are reset."""
    weights = _bytes(params)
    if main_grads is not None:
        grads = _bytes(main_grads)
    else:
        grads = _bytes(p.grad for p in params if p.grad is not None)
    moments = _bytes(
        v
        for state in opt.state.values()
        for v in state.values()
        if isinstance(v, torch.Tensor) and v.dim() > 0
    )
    master = 0 if fp32 else _bytes(masters)
    return weights, grads, moments + master


def _optimizer(name: str, tensors: list[torch.Tensor]) -> torch.optim.Optimizer:
    if name in ("adamw", "adamw_fp32"):
        return torch.optim.AdamW(tensors, lr=1e-4, foreach=False)
    if name == "sgd_momentum":
        return torch.optim.SGD(tensors, lr=1e-3, momentum=0.9, foreach=False)
    raise ValueError(f"optimizer {name} is not measured")


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def cuda_available() -> bool:
    return bool(torch.cuda.is_available())


def finite(x: float) -> bool:
    return math.isfinite(x)
