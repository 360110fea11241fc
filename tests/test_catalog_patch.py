"""Quotes that add: --catalog adds to the shipped catalogue, `patch:` changes fields by id.

The README says a --catalog file is read after the shipped catalogue; --no-default-catalog
uses the given files alone. A patch changes only the fields it names (a mapping merges key
by key); the plan names the file and line of each item it used and of each patch applied.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.factories.files import write_catalog, write_file
from tests.support.shipped import ROOT, shipped

from gpusolve.load import load_catalog
from gpusolve.load.catalog import deep_merge
from gpusolve.load.data import data_dir

CHAT = ROOT / "examples" / "chat-day-lora-night.yaml"


def _plan(gpusolve: Any, *args: str) -> dict[str, Any]:
    result = gpusolve("plan", "-q", "--format", "json", *args)
    assert result.code == 0, result.err + result.out
    data: dict[str, Any] = json.loads(result.out)
    return data


def _owned_server(plan: dict[str, Any]) -> tuple[str, int]:
    """The one server model the plan buys, and how many."""
    bought = {d["server"] for d in plan["deployments"] if d["mode"] == "owned"}
    assert len(bought) == 1, plan["deployments"]
    (server,) = bought
    count = sum(s["servers"].get(server, 0) for s in plan["sites"])
    return server, count


def test_one_field_patch_changes_that_price_and_nothing_else(gpusolve, tmp_path: Path) -> None:
    # Sized to the estimate as it stands, the example buys one server model for both shifts
    # (with the default margin its two workloads take two models).
    chat = write_file(tmp_path, CHAT.read_text(encoding="utf-8") + "margin: 0\n", "chat.yaml")
    base = _plan(gpusolve, str(chat))
    server, count = _owned_server(base)
    old_price = next(s["price"] for s in shipped("servers") if s["id"] == server)
    quote = write_file(
        tmp_path,
        f"currency: CNY\npatch:\n  - id: {server}\n    price: {old_price - 10_000:.0f}\n",
        "quote.yaml",
    )
    patched = _plan(gpusolve, str(chat), "--catalog", str(quote))

    saving = 10_000 * count
    assert patched["cost"]["capex"] == pytest.approx(base["cost"]["capex"] - saving)
    parts, old_parts = patched["cost"]["breakdown"], base["cost"]["breakdown"]
    # No resale credit by default (issue 35): the TCO falls by the whole saving.
    assert base["cost"]["horizon_resale"] is None
    assert patched["cost"]["tco"] == pytest.approx(base["cost"]["tco"] - saving)
    assert parts["servers_capex"] == pytest.approx(old_parts["servers_capex"] - saving)
    # Everything but the money (the cost, the bill of materials, the payment schedule, the
    # payback and the cash view that follow from it) and the provenance of the patched
    # server is the same.
    money = ("cost", "bom", "sources", "solver", "payments", "payback", "cash")
    same = {k: v for k, v in patched.items() if k not in money}
    assert same == {k: v for k, v in base.items() if k not in money}
    sources = {s["id"]: s for s in patched["sources"]}
    assert sources[server]["patched_at"] == [{"at": f"{quote}:3", "fields": ["price"]}]
    assert sources[server]["defined_at"].startswith("catalog/servers.yaml:")
    unpatched = [s for s in patched["sources"] if s["id"] != server]
    assert unpatched and all(s["patched_at"] == [] for s in unpatched)
    assert [s for s in base["sources"] if s["id"] != server] == unpatched


def test_a_nested_patch_keeps_the_sibling_fields(tmp_path: Path) -> None:
    quote = write_file(
        tmp_path,
        "patch:\n"
        "  - id: hgx-h100-8gpu\n"
        "    price: 2000000\n"
        "    pricing: {illustrative: false, source: quote from ACME of 2026-11-28}\n"
        "  - id: b200\n"
        "    export_cn: {status: not-restricted, source: our legal memo 2026-12}\n",
        "quote.yaml",
    )
    shipped_cat = load_catalog([data_dir("catalog")])
    loaded = load_catalog([data_dir("catalog"), quote])
    before, after = (
        shipped_cat.catalog.servers["hgx-h100-8gpu"],
        loaded.catalog.servers["hgx-h100-8gpu"],
    )
    assert after.price == 2_000_000
    assert after.pricing.illustrative is False
    assert after.pricing.source == "quote from ACME of 2026-11-28"
    assert after.pricing.as_of == before.pricing.as_of  # not named: kept
    assert after.model_dump(exclude={"price", "pricing"}) == before.model_dump(
        exclude={"price", "pricing"}
    )
    card = loaded.catalog.cards["b200"]
    old = shipped_cat.catalog.cards["b200"].export_cn
    assert card.export_cn is not None and old is not None
    assert (card.export_cn.status, card.export_cn.rule) == ("not-restricted", old.rule)
    assert [r.fields for r in loaded.patches["hgx-h100-8gpu"]] == [("price", "pricing")]


def test_catalog_adds_a_server_for_a_shipped_card(gpusolve, tmp_path: Path) -> None:
    # Before, --catalog replaced the shipped catalogue: "known cards: (none)".
    server = next(s for s in shipped("servers") if s["id"] == "atlas-800t-a2")
    mine = dict(server, id="my-atlas", price=server["price"] * 0.9)
    path = write_catalog(tmp_path, "mine.yaml", servers=[mine])
    result = gpusolve("catalog", "show", "my-atlas", "--catalog", str(path))
    assert result.code == 0, result.err
    assert f"defined at {path}:" in result.out
    listed = gpusolve("catalog", "list", "--kind", "servers", "--catalog", str(path))
    assert "my-atlas" in listed.out and "atlas-800t-a2" in listed.out
    alone = gpusolve("catalog", "validate", "--no-default-catalog", str(path))
    assert alone.code == 2 and "unknown card 'ascend-910b'" in alone.err


def test_plain_duplicate_is_an_input_error_and_replace_restates(gpusolve, tmp_path: Path) -> None:
    card = next(c for c in shipped("cards") if c["id"] == "l20")
    dup = tmp_path / "dup.yaml"
    dup.write_text(yaml.safe_dump({"currency": "CNY", "cards": [dict(card, tdp_w=300)]}))
    result = gpusolve("catalog", "validate", str(dup))
    assert result.code == 2
    assert f"{dup}:2:" in result.err and "duplicate id 'l20'" in result.err
    assert "patch:" in result.err and "replace: true" in result.err
    assert "Traceback" not in result.err
    whole = tmp_path / "whole.yaml"
    whole.write_text(
        yaml.safe_dump({"currency": "CNY", "replace": True, "cards": [dict(card, tdp_w=300)]})
    )
    loaded = load_catalog([data_dir("catalog"), whole])
    assert loaded.catalog.cards["l20"].tdp_w == 300
    assert loaded.defined_at("l20").startswith(f"{whole}:")


@pytest.mark.parametrize(
    ("body", "line", "words"),
    [
        ("  - id: hgx-h100-8gp\n    price: 1\n", 2, "patch for unknown id 'hgx-h100-8gp'"),
        ("  - id: hgx-h100-8gpu\n    prise: 1\n", 3, "unknown field 'prise' for a server"),
        (
            "  - id: hgx-h100-8gpu\n    price: -5\n",
            3,
            "price: -5 is out of range; expected greater than 0",
        ),
        ("  - id: hgx-h100-8gpu\n", 2, "changes nothing"),
    ],
)
def test_bad_patches_name_file_and_line(
    gpusolve, tmp_path: Path, body: str, line: int, words: str
) -> None:
    path = write_file(tmp_path, "patch:\n" + body, "bad.yaml")
    result = gpusolve("plan", "-q", str(CHAT), "--catalog", str(path))
    assert result.code == 2
    assert f"{path}:{line}:" in result.err and words in result.err, result.err
    assert "Traceback" not in result.err


def test_no_default_catalog_needs_a_file(gpusolve) -> None:
    result = gpusolve("plan", "-q", str(CHAT), "--no-default-catalog")
    assert result.code == 2 and "--catalog" in result.err


def test_deep_merge_merges_mappings_and_replaces_the_rest() -> None:
    base = {"a": {"x": 1, "y": 2}, "l": [1, 2], "n": 3}
    assert deep_merge(base, {"a": {"y": 5}, "l": [9], "n": None}) == {
        "a": {"x": 1, "y": 5},
        "l": [9],
        "n": None,
    }
    assert base == {"a": {"x": 1, "y": 2}, "l": [1, 2], "n": 3}  # not mutated


def test_readme_says_what_catalog_does(gpusolve, tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "read after the shipped catalogue" in readme and "--no-default-catalog" in readme
    # The README's patch: example is a working catalogue file.
    block = readme.split("```yaml\npatch:", 1)[1].split("```", 1)[0]
    quote = write_file(tmp_path, "patch:" + block, "readme-quote.yaml")
    result = gpusolve("catalog", "show", "h20-96gb", "--catalog", str(quote))
    assert result.code == 0, result.err
    assert f"patched at {quote}:" in result.out and "status: not-restricted" in result.out
