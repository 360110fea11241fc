"""Checkpoint size and the stall of synchronous saves (H16).

A training checkpoint holds the weights and the optimizer state, not gradients: with
mixed-precision AdamW that is 2 (bf16 weights) + 12 (fp32 master, momentum, variance) =
14 B/param, 98 GB for 7B (H16's "28 GB or more" is the weights-only order of magnitude
in fp32). LoRA/QLoRA save only the adapters and their optimizer state. Each save of S bytes
blocks training for S / (writers × storage write speed); saves happen every
`Params.checkpoint_interval_steps` steps and once at the end.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusolve.estimate.memory import (
    MOMENT_BYTES,
    full_training_state_bytes,
    is_fp32_training,
)


@dataclass(frozen=True)
class CheckpointSize:
    weights_bytes: float  # weights only (what serving loads)
    full_bytes: float  # weights + optimizer state (what resuming training needs)


def training_checkpoint(
    *,
    kind: str,
    params: float,
    adapter_params: float,
    precision: str,
    optimizer: str,
) -> CheckpointSize:
    if kind in ("lora", "qlora"):
        # Adapters are trained and saved in fp32.
        weights = adapter_params * 4.0
        return CheckpointSize(weights, weights + adapter_params * MOMENT_BYTES[optimizer])
    per = full_training_state_bytes(precision, optimizer)
    weight_b = 4.0 if is_fp32_training(precision, optimizer) else 2.0
    return CheckpointSize(params * weight_b, params * (per.weights + per.optimizer))


def inference_checkpoint(*, weights_bytes: float) -> CheckpointSize:
    return CheckpointSize(weights_bytes, weights_bytes)


@dataclass(frozen=True)
class CheckpointStall:
    save_time_s: float
    saves: int
    stall_s: float


def checkpoint_stall(
    *,
    checkpoint_bytes: float,
    writers: int,
    write_bytes_per_s: float,
    steps: int,
    interval_steps: int,
) -> CheckpointStall:
    """Seconds training waits for synchronous saves. `writers` nodes write their shards in
    parallel (sharded or distributed checkpoints); a DDP replica in one node writes alone."""
    if write_bytes_per_s <= 0:
        return CheckpointStall(float("inf"), 1, float("inf"))
    save = checkpoint_bytes / (max(1, writers) * write_bytes_per_s)
    saves = max(1, steps // max(1, interval_steps))
    return CheckpointStall(save, saves, saves * save)
