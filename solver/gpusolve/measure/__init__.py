"""`gpusolve measure`: time a workload's own model with PyTorch and write its `measured:` block.

PyTorch is the optional extra `gpusolve[measure]`; nothing here imports it at module level
(`torchrun.py` does, and is imported only when a measurement runs), so the base install and
`gpusolve --help` never load it.

Fewer layers (`--layers N`), scaled back by this arithmetic:
  * time per token scales with the model FLOPs per token (6·N plus attention, the MFU
    numerator): tokens/s(full) = tokens/s(built) x F(built) / F(full), so the MFU is the
    one measured;
  * model states are the formula's for the full model (exact: tests/test_measure*.py);
  * activations scale with the layers: peak(full) = states(full) + (peak(built) -
    states(built)) x L(full) / L(built) (the LM head's logits, which do not scale, are
    counted L(full)/L(built) times: an overestimate of at most the logits' share).
"""

from __future__ import annotations

import importlib.util
from types import ModuleType

from gpusolve.errors import InputError

INSTALL_HINT = (
    "install the optional extra: pip install 'gpusolve[measure]' (PyTorch; a CPU-only build "
    "is enough for --device cpu)"
)


def torch_available() -> bool:
    return importlib.util.find_spec("torch") is not None


def require_torch(where: str = "gpusolve measure") -> ModuleType:
    """The torch module, or an InputError (exit 2) saying how to install it."""
    if not torch_available():
        raise InputError.single(where, "PyTorch is not installed", hint=INSTALL_HINT)
    import torch

    return torch


def scaled_tokens_per_s(built_rate: float, built_flops: float, full_flops: float) -> float:
    """Tokens/s of the full model from a run of fewer layers (FLOPs-per-token scaling)."""
    return built_rate * built_flops / full_flops


def scaled_peak_bytes(
    peak_built: float, states_built: float, states_full: float, built_layers: int, layers: int
) -> float:
    """Peak memory of the full model from a run of fewer layers (activations per layer)."""
    return states_full + max(0.0, peak_built - states_built) * layers / built_layers
