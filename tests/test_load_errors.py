"""Bad input gives exit 2 and a one-screen message naming the file and line; never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.factories.files import write_file

from gpusolve.errors import InputError
from gpusolve.load import load_catalog, load_requirements

CARD = """\
  - id: test-card
    name: Test Card 80GB
    vendor: test
    memory_gb: 80
    memory_type: HBM3
    memory_bandwidth_gbs: 3350
    tflops: {fp32: 67, bf16: 989, fp16: 989}
    tdp_w: 700
    peer_link: nvlink
    peer_bandwidth_gbs: 900
    pcie_gen: 5
    form_factor: sxm
    confidence: V
    source: test datasheet
"""

SERVER = """\
  - id: test-server
    name: Test 8-GPU
    card: {card}
    gpus: 8
    topology: nvswitch
    peer_bandwidth_gbs: 900
    cpu: {{model: x, sockets: 2, cores_total: 112, pcie_lanes: 160, base_ghz: 2.0}}
    ram_gb: 2048
    fabric: {{kind: infiniband, nics: 8, nic_gbps: 400}}
    storage_write_gbs: 20
    power_kw: 10.2
    rack_units: 8
    cooling: [air]
    price: {price}
    pricing: {{illustrative: true, as_of: "2026-11", source: test}}
    confidence: E
    source: test
"""


def catalog_text(card: str = CARD, server_card: str = "test-card", price: str = "2000000") -> str:
    return (
        "currency: CNY\ncards:\n"
        + card
        + "servers:\n"
        + SERVER.format(card=server_card, price=price)
    )


def line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def assert_user_error(result, path: Path, line: int | None) -> None:  # type: ignore[no-untyped-def]
    assert result.code == 2, result
    assert "Traceback" not in result.err + result.out
    assert str(path) in result.err
    if line is not None:
        assert f"{path}:{line}:" in result.err, result.err
    assert len(result.err.splitlines()) <= 25  # one screen


def test_valid_catalog_passes(gpusolve, tmp_path: Path) -> None:
    path = write_file(tmp_path, catalog_text(), "cat.yaml")
    result = gpusolve("catalog", "validate", str(path))
    assert result.code == 0, result.err
    assert "cards" in result.out and "1" in result.out


# One edit to a valid catalogue, the line the error must point at, and what it must say.
SINGLE_FILE_MISTAKES = [
    pytest.param(
        "memory_gb: 80", "memory_gb: lots", "memory_gb: lots", "expected a number", id="wrong-type"
    ),
    pytest.param(
        "    tdp_w: 700\n",
        "    tdp_w: 700\n    tdp_watts: 700\n",
        "tdp_watts",
        "unknown field 'tdp_watts'",
        id="unknown-field",
    ),
    pytest.param(
        "card: test-card",
        "card: no-such-card",
        "card: no-such-card",
        "unknown card 'no-such-card'",
        id="unknown-card",
    ),
    pytest.param("price: 2000000", "price: -5", "price: -5", "out of range", id="negative-price"),
    pytest.param(
        "memory_bandwidth_gbs: 3350",
        "memory_bandwidth_gbs: .nan",
        ".nan",
        "not a finite number",
        id="nan",
    ),
    pytest.param("tdp_w: 700", "tdp_w: .inf", ".inf", "not a finite number", id="infinity"),
    pytest.param(
        "    tdp_w: 700\n",
        "    tdp_w: 700\n    tdp_w: 600\n",
        "tdp_w: 600",
        "appears twice",
        id="duplicate-key",
    ),
    pytest.param(
        "power_kw: 10.2",
        "power_kw: 2.0",
        "power_kw: 2.0",
        "less than its 8 GPUs' TDP",
        id="power-below-gpu-tdp",
    ),
    pytest.param(
        "power_kw: 10.2",
        "power_kw: 10200",
        "power_kw: 10200",
        "no rack could hold",
        id="power-beyond-any-rack",
    ),
    pytest.param("gpus: 8", "gpus: 0", "gpus: 0", "out of range", id="zero-gpus"),
]


@pytest.mark.parametrize(("old", "new", "needle", "message"), SINGLE_FILE_MISTAKES)
def test_single_file_mistake(  # type: ignore[no-untyped-def]
    gpusolve, tmp_path: Path, old: str, new: str, needle: str, message: str
) -> None:
    text = catalog_text()
    assert old in text
    text = text.replace(old, new, 1)
    path = write_file(tmp_path, text, "cat.yaml")
    result = gpusolve("catalog", "validate", str(path))
    assert_user_error(result, path, line_of(text, needle))
    assert message in result.err, result.err


def test_yaml_syntax_error(gpusolve, tmp_path: Path) -> None:
    text = catalog_text().replace("memory_gb: 80\n", "memory_gb: [80\n")
    path = write_file(tmp_path, text, "cat.yaml")
    result = gpusolve("catalog", "validate", str(path))
    assert_user_error(result, path, None)
    assert "YAML syntax error" in result.err


def test_duplicate_id_across_files(gpusolve, tmp_path: Path) -> None:
    first = write_file(tmp_path, catalog_text(), "a.yaml")
    second_text = "currency: CNY\ncards:\n" + CARD
    second = write_file(tmp_path, second_text, "b.yaml")
    result = gpusolve("catalog", "validate", str(first), str(second))
    assert_user_error(result, second, line_of(second_text, "id: test-card"))
    assert "duplicate id 'test-card'" in result.err
    assert f"{first}:" in result.err  # names where it was first defined
    assert "replace: true" in result.err


def test_replace_true_allows_override(tmp_path: Path) -> None:
    first = write_file(tmp_path, catalog_text(), "a.yaml")
    second = write_file(
        tmp_path,
        "currency: CNY\nreplace: true\ncards:\n" + CARD.replace("memory_gb: 80", "memory_gb: 96"),
        "b.yaml",
    )
    catalog = load_catalog([first, second]).catalog
    assert catalog.cards["test-card"].memory_gb == 96


def test_alias_bomb(gpusolve, tmp_path: Path) -> None:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 10):
        refs = ",".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    text = "\n".join(lines) + "\n"
    path = write_file(tmp_path, text, "cat.yaml")
    result = gpusolve("catalog", "validate", str(path))
    assert_user_error(result, path, None)
    assert "alias" in result.err


def test_fifty_megabyte_file(gpusolve, tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("w") as handle:
        handle.write("currency: CNY\n# " + "x" * (50 * 1024 * 1024) + "\n")
    result = gpusolve("catalog", "validate", str(path))
    assert_user_error(result, path, None)
    assert "MB" in result.err


def test_directory_passed_as_file(tmp_path: Path) -> None:
    folder = tmp_path / "reqs.yaml"
    folder.mkdir()
    with pytest.raises(InputError) as info:
        load_requirements(folder)
    assert "is a directory" in str(info.value)


def test_empty_folder_as_catalog(gpusolve, tmp_path: Path) -> None:
    result = gpusolve("catalog", "validate", str(tmp_path))
    assert_user_error(result, tmp_path, None)


def test_missing_file(gpusolve, tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    result = gpusolve("catalog", "validate", str(path))
    assert_user_error(result, path, None)
    assert "no such file" in result.err


def test_currency_mismatch_between_files(gpusolve, tmp_path: Path) -> None:
    first = write_file(tmp_path, catalog_text(), "a.yaml")
    other = "currency: USD\ncards:\n" + CARD.replace("test-card", "other-card")
    second = write_file(tmp_path, other, "b.yaml")
    result = gpusolve("catalog", "validate", str(first), str(second))
    assert_user_error(result, second, 1)
    assert "currency USD differs from CNY" in result.err


def test_requirements_region_alias_and_unknown_region(tmp_path: Path) -> None:
    from gpusolve.load import check_against_catalog, load_requirements_doc

    text = (
        "workloads:\n"
        "  - name: chat\n    kind: inference\n    model: {params_b: 13}\n"
        "    target_tokens_per_s: 500\n    regions: [苏南, Sozhou]\n"
    )
    path = write_file(tmp_path, text, "reqs.yaml")
    reqs, doc = load_requirements_doc(path)
    catalog = load_catalog().catalog
    with pytest.raises(InputError) as info:
        check_against_catalog(reqs, doc, catalog)
    message = str(info.value)
    assert "Sozhou" in message and "苏南" not in message
    assert f"{path}:6:" in message
    assert "suzhou" in message.lower()  # suggestion


REQS_HEAD = (
    "workloads:\n"
    "  - name: chat\n    kind: inference\n    model: {params_b: 13}\n"
    "    target_tokens_per_s: 500\n"
)


@pytest.mark.parametrize(
    ("tail", "line", "message"),
    [
        ("budget:\n  capex_max: -5\n", 7, "budget.capex_max: -5 is out of range"),
        (
            "scenarios:\n  - name: a\n    probability: 1\n    prices: {gpus: 2}\n",
            9,
            "scenarios.0.prices.gpus: unknown field 'gpus'",
        ),
        (
            "scenarios:\n  - name: a\n    probability: 1\n    demand: {chat: 0}\n",
            9,
            "scenarios.0.demand.chat: 0 is out of range",
        ),
        ("scenarios: []\n", 6, "scenarios: [] has 0 item(s); expected at least 1"),
    ],
    ids=["negative-budget", "unknown-price-key", "zero-demand", "no-scenarios"],
)
def test_an_optional_field_reports_what_is_wrong_with_its_value(
    tmp_path: Path, tail: str, line: int, message: str
) -> None:
    """A field that may be left out (`number | null`, `list | null`) and is given a wrong
    value says what is wrong with the value, at its line, not that it should be null."""
    path = write_file(tmp_path, REQS_HEAD + tail, "reqs.yaml")
    with pytest.raises(InputError) as info:
        load_requirements(path)
    text = str(info.value)
    assert f"{path}:{line}:" in text and message in text, text
    assert "null" not in text, text
