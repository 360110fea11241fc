"""`gpusolve measure` on the CPU: the physics' model-state bytes equal the bytes PyTorch holds,
exactly; activations within ACTIVATION_TOLERANCE; PyTorch stays an optional extra."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gpusolve.measure import scaled_peak_bytes, scaled_tokens_per_s
from gpusolve.models.params import Params
from gpusolve.models.requirements import ModelShape, Workload, make_workload

# Bytes autograd saves for backward in one micro-batch's forward (incl. the fp32 loss) against
# the formula's tensor inventory plus the output layer, on tiny shapes: within 30% (measured
# 3-27% above: the int64 token ids, RMSNorm's saved statistics, SiLU's separately saved
# output and the SDPA kernel's log-sum-exp are not in the inventory, which counts what fused
# kernels keep — grouped-query K/V at their width, no dropout masks without dropout — and
# weigh most at tiny widths: the Llama-like 64-wide bf16 case is the 27%).
ACTIVATION_TOLERANCE = 0.30

TINY = ModelShape(layers=2, hidden=64, heads=4, kv_heads=2, ffn=160, vocab=512)
GPT_LIKE = ModelShape(
    layers=2, hidden=96, heads=6, ffn=384, vocab=384, gated_ffn=False, tied_embeddings=True
)


def tiny(**over: Any) -> Workload:
    base: dict[str, Any] = {
        "name": "tiny",
        "kind": "pretrain",
        "model": TINY,
        "tokens": 1e6,
        "seq_len": 64,
        "micro_batch": 2,
    }
    return make_workload(**{**base, **over})


def run(w: Workload, params: Params | None = None, **opts: Any) -> Any:
    pytest.importorskip("torch")  # the `test` extra installs it: this never skips in CI
    from gpusolve.measure.session import Options, measure

    return measure(
        w, None, params or Params(), Options(steps=1, warmup=1, device="cpu", **opts), "t"
    )


CASES = [
    {},
    {"precision": "fp32"},
    {"optimizer": "sgd_momentum", "gradient_checkpointing": "full"},
    {"gradient_checkpointing": "selective", "precision": "fp16"},
    {"model": GPT_LIKE, "optimizer": "adamw_fp32"},
    {"model": GPT_LIKE, "micro_batch": 1, "seq_len": 96},
]


@pytest.mark.parametrize("over", CASES, ids=lambda o: ",".join(f"{k}" for k in o) or "bf16")
@pytest.mark.parametrize("convention", [16, 18])
def test_model_states_exact_and_activations_within_tolerance(
    over: dict[str, Any], convention: int
) -> None:
    r = run(tiny(**over), Params(bytes_per_param_convention=convention))
    assert r.params == r.formula_params
    assert r.counted_states == r.formula_states
    assert r.counted_states.weights > 0 and r.counted_states.optimizer > 0
    ratio = r.saved_activation_bytes / r.formula_activation_bytes
    assert abs(ratio - 1) <= ACTIVATION_TOLERANCE, ratio


def test_fewer_layers_are_counted_and_scaled_back() -> None:
    w = tiny(model=ModelShape(layers=4, hidden=64, heads=4, kv_heads=2, ffn=160, vocab=512))
    r = run(w, layers=1)
    assert (r.layers, r.full_layers) == (1, 4)
    assert r.counted_states == r.formula_states  # the built model, exactly
    assert any("built 1 of 4 layers" in n for n in r.notes)


def test_the_scaling_arithmetic() -> None:
    assert scaled_tokens_per_s(1000.0, 3e9, 6e9) == pytest.approx(500.0)
    # states 10 + activations (30 - 10) x 4 / 1
    assert scaled_peak_bytes(30.0, 10.0, 40.0, 1, 4) == pytest.approx(40.0 + 80.0)


REQS = """\
# measured below
workloads:
  - name: tiny
    kind: pretrain
    model: {layers: 2, hidden: 64, heads: 4, kv_heads: 2, ffn: 160, vocab: 512}
    tokens: 1.0e+6   # per run
    seq_len: 64
    micro_batch: 2

  - name: other
    kind: lora
    model: {params_b: 1}
    tokens: 1.0e+9
"""


def test_cli_prints_and_updates_the_block(gpusolve: Callable[..., Any], tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from gpusolve.load import load_requirements

    path = tmp_path / "reqs.yaml"
    path.write_text(REQS)
    args = ("measure", str(path), "--workload", "tiny", "--device", "cpu", "--steps", "1")
    shown = gpusolve(*args, "--card", "h100-sxm")
    assert shown.code == 0, shown.err
    assert "measured:\n  card: h100-sxm\n  gpus: 1\n  tokens_per_s:" in shown.out
    assert path.read_text() == REQS  # printing never writes
    for card in ("h100-sxm", "a100-80gb-sxm"):  # the second run replaces the first block
        assert gpusolve(*args, "--card", card, "--update").code == 0
    text = path.read_text()
    assert text.count("measured:") == 1 and "# per run" in text and "# measured below" in text
    m = load_requirements(path).workloads[0].measured
    assert m is not None and m.card == "a100-80gb-sxm" and m.tokens_per_s and m.micro_batch == 2
    assert load_requirements(path).workloads[1].measured is None


def test_cli_refusals_exit_2(gpusolve: Callable[..., Any], tmp_path: Path) -> None:
    path = tmp_path / "reqs.yaml"
    path.write_text(REQS)
    base = ("measure", str(path), "--device", "cpu")
    lora = gpusolve(*base, "--workload", "other")
    assert lora.code == 2 and "cannot be measured" in lora.err and "Traceback" not in lora.err
    assert gpusolve(*base, "--workload", "nope").code == 2
    assert gpusolve(*base, "--workload", "tiny", "--update").code == 2  # --update needs --card


def test_without_pytorch_it_says_how_to_install(
    gpusolve: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpusolve.measure as measure_pkg

    monkeypatch.setattr(measure_pkg, "torch_available", lambda: False)
    path = tmp_path / "reqs.yaml"
    path.write_text(REQS)
    out = gpusolve("measure", str(path), "--workload", "tiny", "--device", "cpu")
    assert out.code == 2 and "pip install 'gpusolve[measure]'" in out.err


def test_the_base_install_and_help_do_not_import_torch() -> None:
    code = (
        "import sys\n"
        "from gpusolve.cli import main\n"
        "for args in (['--help'], ['measure', '--help'], ['profile', '--help']):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "import gpusolve.measure, gpusolve.measure.session, gpusolve.estimate, gpusolve.profile\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"
