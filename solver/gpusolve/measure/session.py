"""One measurement: check the workload can be measured, run it (torchrun.py), compare with
the physics and assemble the `measured:` block. Imports torch only inside `measure`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gpusolve.errors import InputError
from gpusolve.estimate.compute import compute_precision
from gpusolve.estimate.layout import Layout
from gpusolve.estimate.memory import ModelStates
from gpusolve.estimate.shapes import Arch, count_params, resolve_arch
from gpusolve.estimate.trainshape import (
    model_flops_per_token,
    training_activations_for,
    training_states_for,
)
from gpusolve.estimate.units import GB
from gpusolve.measure import require_torch, scaled_peak_bytes, scaled_tokens_per_s
from gpusolve.models.catalog import Card
from gpusolve.models.measure import MeasureReport, StateBytes
from gpusolve.models.params import Params
from gpusolve.models.requirements import (
    Measured,
    ModelShape,
    Training,
    TrainingWorkload,
    Workload,
)

if TYPE_CHECKING:
    from gpusolve.measure.torchrun import RunResult

MEASURED_PRECISIONS = ("fp32", "bf16", "fp16", "fp8")
MEASURED_OPTIMIZERS = ("adamw", "adamw_fp32", "sgd_momentum")


def _state_bytes(states: ModelStates | RunResult) -> StateBytes:
    """Model-state bytes as the run counted them or as the physics gives them."""
    return StateBytes(
        weights=states.weights_bytes,
        gradients=states.gradients_bytes,
        optimizer=states.optimizer_bytes,
    )


@dataclass(frozen=True)
class Options:
    steps: int = 20
    warmup: int = 2
    device: str = "cuda"
    layers: int | None = None
    micro_batch: int | None = None
    seq_len: int | None = None


def check_measurable(w: Workload, arch: Arch, where: str) -> list[str]:
    """What `measure` cannot run, as sentences (empty: it can)."""
    out: list[str] = []
    if not isinstance(w, TrainingWorkload):
        out.append(f"a {w.kind} workload (measure runs full training: pretrain, full_finetune)")
    if w.precision not in MEASURED_PRECISIONS:
        out.append(f"precision {w.precision} (measure runs fp32, bf16, fp16; fp8 as bf16)")
    if isinstance(w, Training) and w.optimizer not in MEASURED_OPTIMIZERS:
        out.append(
            f"optimizer {w.optimizer} (measure runs {', '.join(MEASURED_OPTIMIZERS)}: the others "
            "need bitsandbytes or keep factored states the physics does not count per tensor)"
        )
    if arch.is_moe or arch.is_mla:
        out.append("a mixture-of-experts or latent-attention model (measure builds dense GQA)")
    if arch.heads % arch.kv_heads:
        out.append(f"{arch.kv_heads} KV heads that do not divide {arch.heads} heads")
    return out


# The dense GQA model measure builds (measure_problems refuses the others): these figures
# of the shape as the physics resolved it, under the same names.
_DENSE_SHAPE = ("hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "gated_ffn")


def built_arch(arch: Arch, layers: int) -> Arch:
    """The same shape with `layers` layers, counted by the physics' own formula."""
    positions = round((arch.input_embedding_params - arch.vocab * arch.hidden) / arch.hidden)
    head = arch.embedding_params - arch.input_embedding_params - arch.hidden
    tied = head < arch.vocab * arch.hidden / 2
    dense = {name: getattr(arch, name) for name in _DENSE_SHAPE}
    shape = ModelShape(layers=layers, tied_embeddings=tied, **dense)
    built = resolve_arch(shape)
    if positions > 0:
        # The shape's own fields (those given) are count_params' keywords.
        counted = count_params(**shape.model_dump(exclude_none=True), learned_positions=positions)
        from dataclasses import replace

        built = replace(
            built,
            params=counted.total,
            active_params=counted.active,
            embedding_params=counted.embeddings,
            input_embedding_params=counted.input_embeddings,
        )
    return built


def run_layout(micro_batch: int, checkpointing: str) -> Layout:
    return Layout(1, 1, 1, 1, "ddp", checkpointing, micro_batch=micro_batch, grad_accum=1)


def measure(
    w: Workload, card: Card | None, params: Params, opts: Options, where: str
) -> MeasureReport:
    arch = resolve_arch(w.model)
    problems = check_measurable(w, arch, where)
    if problems or not isinstance(w, TrainingWorkload):
        raise InputError.single(
            where,
            f"workload {w.name!r} cannot be measured: " + "; ".join(problems),
            hint="measure a dense pretrain or full_finetune workload",
        )
    require_torch()
    from gpusolve.measure import torchrun

    if opts.device == "cuda" and not torchrun.cuda_available():
        raise InputError.single(
            "--device", "no CUDA device is visible to PyTorch", hint="use --device cpu"
        )
    layers = min(opts.layers or arch.layers, arch.layers)
    built = built_arch(arch, layers)
    seq = opts.seq_len or w.seq_len
    micro = opts.micro_batch or w.micro_batch
    ckpt = w.gradient_checkpointing or "none"
    run_w = w.model_copy(update={"seq_len": seq, "measured": None})
    notes: list[str] = []
    if w.precision == "fp8":
        notes.append("fp8 runs as bf16 (no Transformer Engine): the rate is a bf16 rate")
    cfg = torchrun.RunConfig(
        precision="bf16" if w.precision == "fp8" else w.precision,
        optimizer=w.optimizer,
        convention=params.bytes_per_param_convention,
        micro_batch=micro,
        seq_len=seq,
        checkpointing=ckpt,
        dropout=w.dropout,
        steps=opts.steps,
        warmup=opts.warmup,
        device=opts.device,
    )
    result = torchrun.run(built, cfg)
    lay = run_layout(micro, ckpt)
    states = training_states_for(run_w, built, 1, lay, params)
    full_states = training_states_for(run_w, arch, 1, lay, params)
    acts = training_activations_for(run_w, built, 1, lay, working_set=False)
    tokens = micro * seq
    built_rate = tokens / result.step_s
    f_built = model_flops_per_token(built, run_w)
    f_full = model_flops_per_token(arch, run_w)
    rate = scaled_tokens_per_s(built_rate, f_built, f_full)
    mfu = None
    if card is not None:
        fmt = compute_precision(w.kind, w.precision, w.optimizer)
        peak = (card.tflops_at(fmt) or card.tflops.fp32) * 1e12
        mfu = rate * f_full / peak
    if layers < arch.layers:
        notes.append(
            f"built {layers} of {arch.layers} layers: tokens/s scaled by model FLOPs per token "
            f"({f_built:.3g} / {f_full:.3g}), peak memory by layers (gpusolve.measure)"
        )
    counted_states = result.weights_bytes + result.gradients_bytes + result.optimizer_bytes

    def full_model_gb(peak_bytes: int) -> float:
        full = full_states.total_bytes
        return scaled_peak_bytes(peak_bytes, counted_states, full, layers, arch.layers) / GB

    peak_gb = alloc_gb = None
    if result.peak_reserved_bytes is not None and result.peak_allocated_bytes is not None:
        peak_gb = full_model_gb(result.peak_reserved_bytes)
        alloc_gb = full_model_gb(result.peak_allocated_bytes)
    if opts.device == "cpu":
        notes.append(
            "measured on the CPU: a check of the tooling and of the memory model, not a "
            "card's speed; do not plan from its tokens/s"
        )
    block = None
    if card is not None:
        block = Measured(
            card=card.id,
            gpus=1,
            tokens_per_s=round(rate, 3),
            mfu=float(f"{min(1.0, mfu):.4g}") if mfu else None,
            peak_memory_gb=round(peak_gb, 3) if peak_gb else None,
            peak_allocated_gb=round(alloc_gb, 3) if alloc_gb else None,
            seq_len=seq if seq != w.seq_len else None,
            micro_batch=micro,
            sharding="ddp",
            checkpointing=ckpt,
        )
    else:
        notes.append("no card: give --card ID to get the measured: block (MFU needs its peak)")
    return MeasureReport(
        workload=w.name,
        device=result.device_name,
        card=card.id if card is not None else None,
        steps=opts.steps,
        layers=layers,
        full_layers=arch.layers,
        params=result.params,
        formula_params=built.params,
        step_s=result.step_s,
        tokens_per_s=rate,
        mfu=mfu,
        counted_states=_state_bytes(result),
        formula_states=_state_bytes(states),
        saved_activation_bytes=result.saved_activation_bytes,
        formula_activation_bytes=acts,
        peak_allocated_gb=alloc_gb,
        peak_reserved_gb=peak_gb,
        notes=notes,
        measured=block,
    )
