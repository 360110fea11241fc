"""A workload is one model per kind, chosen by `kind` (issue 23): a field of another kind is
a located error, each kind's own message survives, and rules still see one shape."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.factories.files import write_file
from tests.factories.requirements import workload

from gpusolve.errors import InputError
from gpusolve.load import load_requirements
from gpusolve.models.requirements import (
    FineTuneWorkload,
    InferenceWorkload,
    TrainingWorkload,
    make_workload,
)
from gpusolve.rules.environment import workload_plain


def load_error(tmp_path: Path, text: str) -> str:
    path = write_file(tmp_path, "workloads:\n" + text, "reqs.yaml")
    with pytest.raises(InputError) as info:
        load_requirements(path)
    return str(info.value)


@pytest.mark.parametrize(
    ("kind", "cls"),
    [
        ("pretrain", TrainingWorkload),
        ("full_finetune", TrainingWorkload),
        ("lora", FineTuneWorkload),
        ("qlora", FineTuneWorkload),
        ("inference", InferenceWorkload),
    ],
)
def test_kind_chooses_the_model(kind: str, cls: type) -> None:
    w = workload(kind=kind)
    assert type(w) is cls
    assert w.is_training == (kind != "inference")


def test_a_field_of_another_kind_is_a_located_unknown_field(tmp_path: Path) -> None:
    message = load_error(
        tmp_path,
        "  - name: chat\n    kind: inference\n    model: {params_b: 7}\n"
        "    concurrency: 4\n    tokens: 1e9\n"
        "  - name: ft\n    kind: full_finetune\n    model: {params_b: 7}\n"
        "    tokens: 1e9\n    tpot_ms: 50\n",
    )
    assert ":6:5: workloads.0.tokens: unknown field 'tokens'" in message
    assert ":11:5: workloads.1.tpot_ms: unknown field 'tpot_ms'" in message
    assert "lora" not in message  # the hint lists the kind's own fields


def test_lora_settings_belong_to_lora_kinds(tmp_path: Path) -> None:
    message = load_error(
        tmp_path,
        "  - name: ft\n    kind: pretrain\n    model: {params_b: 7}\n"
        "    tokens: 1e9\n    lora: {rank: 8}\n",
    )
    assert ":6:5: workloads.0.lora: unknown field 'lora'" in message


def test_a_bad_or_missing_kind_names_the_kinds(tmp_path: Path) -> None:
    message = load_error(
        tmp_path,
        "  - name: a\n    kind: infrence\n    model: {params_b: 7}\n"
        "  - name: b\n    model: {params_b: 7}\n",
    )
    assert ':3:11: workloads.0.kind: "infrence" is not allowed' in message
    kinds = "'pretrain', 'full_finetune', 'lora', 'qlora', 'inference'"  # as WorkloadKind
    assert f"expected one of: {kinds}" in message
    assert ":5:5: workloads.1: missing required field 'kind'" in message


def test_each_kind_keeps_its_own_message_at_its_line(tmp_path: Path) -> None:
    message = load_error(
        tmp_path,
        "  - name: a\n    kind: qlora\n    model: {params_b: 7}\n"
        "  - name: b\n    kind: inference\n    model: {params_b: 7}\n",
    )
    assert ":2:5: workloads.0: a qlora workload needs tokens (tokens per run)" in message
    assert ":5:5: workloads.1: an inference workload needs target_tokens_per_s" in message


def test_rules_see_every_field_of_every_kind() -> None:
    serving = workload_plain(workload(kind="inference"), 7.0)
    training = workload_plain(workload(kind="lora"), 7.0)
    assert set(serving) == set(training)
    assert serving["training"] is False and training["training"] is True
    assert serving["optimizer"] == "adamw" and serving["tokens"] is None
    assert training["concurrency"] is None


def test_make_workload_rejects_a_field_of_another_kind() -> None:
    with pytest.raises(ValueError, match="concurrency"):
        make_workload(name="w", kind="pretrain", model={"params_b": 7}, tokens=1, concurrency=2)
