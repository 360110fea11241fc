"""Checks on the shipped default catalogue (catalog/*.yaml).

The catalogue is data, so these tests guard the facts that are easy to get wrong: sparse
TFLOPS figures, the A100 40GB bandwidth (H31), servers drawing less than their GPUs, ids that
clash between files, and prices that pretend to be quotes.
"""

from __future__ import annotations

import copy
import json
import statistics
from functools import cache
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from gpusolve.estimate.efficiency import FAMILIES, family_of
from gpusolve.models.catalog import Card, CatalogFile, ColoOffer, Server

CATALOG_DIR = Path(__file__).resolve().parents[1] / "catalog"
FILES = ("cards.yaml", "servers.yaml", "colo-jiangsu.yaml", "cloud.yaml")
SCHEMA_LINE = "# yaml-language-server: $schema=../schemas/catalog.schema.json"

# The required cards, mapped to the ids this catalogue uses.
REQUIRED_CARDS = {
    "A100 40GB SXM": "a100-40gb-sxm",
    "A100 40GB PCIe": "a100-40gb-pcie",
    "A100 80GB SXM": "a100-80gb-sxm",
    "A100 80GB PCIe": "a100-80gb-pcie",
    "A800 80GB SXM": "a800-80gb-sxm",
    "A800 80GB PCIe": "a800-80gb-pcie",
    "H100 SXM": "h100-sxm",
    "H100 PCIe": "h100-pcie",
    "H800 SXM": "h800-sxm",
    "H20 96GB": "h20-96gb",
    "H200 SXM": "h200-sxm",
    "L40S": "l40s",
    "L20": "l20",
    "L4": "l4",
    "RTX 4090": "rtx-4090",
    "RTX 6000 Ada": "rtx-6000-ada",
    "A10": "a10",
    "MI300X": "mi300x",
    "Ascend 910B": "ascend-910b",
}
EXPORT_VARIANTS = {
    "a800-80gb-sxm", "a800-80gb-pcie", "h800-sxm", "h20-96gb", "l20", "rtx-4090d", "rtx-5090d",
    "rtx-5090d-v2",
}  # fmt: skip
UNCERTAIN_CARDS = {"h20-96gb", "l20", "ascend-910b", "ascend-910c"}

# 8-GPU boards the issue asks for: card id -> required topology.
REQUIRED_BOARDS = {
    "a100-80gb-sxm": "nvswitch",
    "a800-80gb-sxm": "nvswitch",
    "h100-sxm": "nvswitch",
    "h800-sxm": "nvswitch",
    "h20-96gb": "nvswitch",
    "h200-sxm": "nvswitch",
    "mi300x": "full_mesh",
    "ascend-910b": "full_mesh",
}
REQUIRED_PCIE8 = {"l40s", "l20", "rtx-4090", "a100-80gb-pcie"}


@cache
def _raw(name: str) -> str:
    return (CATALOG_DIR / name).read_text(encoding="utf-8")


@cache
def _data(name: str) -> dict:
    return yaml.safe_load(_raw(name))


@cache
def _load(name: str) -> CatalogFile:
    return CatalogFile.model_validate(_data(name))


def _cards() -> dict:
    return {c.id: c for c in _load("cards.yaml").cards}


def _servers() -> dict[str, Server]:
    return {s.id: s for s in _load("servers.yaml").servers}


def _colo() -> list[ColoOffer]:
    return list(_load("colo-jiangsu.yaml").colo_offers)


def _priced_items() -> list:
    return [
        *_load("servers.yaml").servers,
        *_load("colo-jiangsu.yaml").colo_offers,
        *_load("cloud.yaml").cloud_offers,
    ]


# ------------------------------------------------------------------------------ files


@pytest.mark.parametrize("name", FILES)
def test_file_validates_and_has_header(name: str) -> None:
    text = _raw(name)
    assert text.splitlines()[0] == SCHEMA_LINE
    assert _data(name)["currency"] == "CNY"
    _load(name)


def test_ids_unique_across_all_files() -> None:
    ids: list[str] = []
    for name in FILES:
        f = _load(name)
        for items in (f.cards, f.servers, f.colo_offers, f.cloud_offers):
            ids.extend(item.id for item in items)
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    assert not duplicates, f"ids used more than once: {duplicates}"


def test_every_price_is_dated_and_labelled() -> None:
    for item in _priced_items():
        note = item.pricing
        assert note.as_of == "2026-11", item.id
        # No shipped price is a real quote; each says what range or arithmetic it came from.
        assert note.illustrative, f"{item.id}: price is not marked illustrative"
        text = note.source.lower()
        assert "illustrative" in text or "estimate" in text, item.id
        assert "catalog-facts" in text or "illustrative" in text, item.id


def test_invented_providers_say_so() -> None:
    f = _load("cloud.yaml")
    for item in [*_colo(), *f.cloud_offers]:
        assert "(illustrative)" in item.provider, item.id


# ------------------------------------------------------------------------------ cards


def test_required_cards_exist() -> None:
    cards = _cards()
    missing = {name: cid for name, cid in REQUIRED_CARDS.items() if cid not in cards}
    assert not missing


def test_a100_40gb_bandwidth_is_datasheet_value_h31() -> None:
    cards = _cards()
    assert cards["a100-40gb-sxm"].memory_bandwidth_gbs == 1555
    assert cards["a100-40gb-pcie"].memory_bandwidth_gbs == 1555


def test_a100_and_a800_bf16_is_dense_312() -> None:
    ampere = [c for cid, c in _cards().items() if cid.startswith(("a100-", "a800-"))]
    assert len(ampere) >= 6
    for card in ampere:
        assert card.tflops.bf16 == 312, card.id
        assert card.tflops.fp16 == 312, card.id
        assert card.tflops.fp8 is None, card.id


def test_no_sparse_figures() -> None:
    for card in _cards().values():
        t = card.tflops
        assert t.bf16 is None or t.bf16 <= 2600, card.id
        assert t.fp16 is None or t.fp16 <= 2600, card.id
        if t.fp8 is not None and t.bf16 is not None:
            # FP8 is twice BF16 at most (2.02 on the L40S sheet, which rounds oddly).
            assert t.fp8 <= 2.05 * t.bf16, card.id
        if t.int8 is not None and t.bf16 is not None:
            assert t.int8 <= 4.01 * t.bf16, card.id
        if t.tf32 is not None and t.bf16 is not None:
            assert t.tf32 <= t.bf16, card.id
        assert t.bf16 is None or t.fp32 <= t.bf16, card.id
        # Dense BF16 per watt tops out near 2.25 TFLOPS/W (B200); a sparse figure doubles it.
        assert t.bf16 is None or t.bf16 / card.tdp_w <= 2.4, card.id


def test_card_figures_are_plausible() -> None:
    for card in _cards().values():
        assert 200 <= card.memory_bandwidth_gbs <= 10_000, card.id
        ratio = card.memory_bandwidth_gbs / card.memory_gb
        assert 8 <= ratio <= 60, f"{card.id}: {ratio:.1f} GB/s per GB"
        assert 50 <= card.tdp_w <= 1200, card.id
        assert 8 <= card.memory_gb <= 200, card.id
        no_link = card.peer_link in ("pcie", "none")
        assert no_link == (card.peer_bandwidth_gbs == 0), card.id
        assert card.peer_bandwidth_gbs <= 1800, card.id


def test_specific_datasheet_values() -> None:
    cards = _cards()
    assert cards["h100-sxm"].tflops.bf16 == 989
    assert cards["h100-sxm"].peer_bandwidth_gbs == 900
    assert cards["h800-sxm"].peer_bandwidth_gbs == 400
    assert cards["a800-80gb-sxm"].peer_bandwidth_gbs == 400
    assert cards["h20-96gb"].peer_bandwidth_gbs == 900
    assert cards["h20-96gb"].tflops.bf16 == 148
    assert cards["h200-sxm"].memory_bandwidth_gbs == 4800
    assert cards["mi300x"].tflops.bf16 == pytest.approx(1307.4)
    rtx = cards["rtx-4090"]
    assert rtx.tflops.bf16 == pytest.approx(165.2)
    assert "accumulate" in (rtx.notes or "").lower()


def test_export_flags() -> None:
    for cid, card in _cards().items():
        assert card.export_variant == (cid in EXPORT_VARIANTS), cid
    for cid in UNCERTAIN_CARDS:
        card = _cards()[cid]
        assert card.confidence == "U", cid
        assert card.notes and "uncertain" in card.notes.lower(), cid


# The export status for China of each shipped card, from the rules its export_cn names
# (catalog-facts §1d): the 2022 rule caught A100/H100, the 2023 rule A800/H800 and the
# cards above TPP 4,800 (or 1,600 at density 5.92), the 2025 licence requirement the H20.
EXPORT_STATUS = {
    "restricted": {
        "a100-40gb-sxm", "a100-40gb-pcie", "a100-80gb-sxm", "a100-80gb-pcie",
        "a800-80gb-sxm", "a800-80gb-pcie", "h100-sxm", "h100-pcie", "h800-sxm",
        "h200-sxm", "b200", "l40s", "l4", "rtx-4090", "rtx-6000-ada", "mi300x",
    },
    "licence-required": set(),
    # The H20: licence required since 2025-04, licences promised to NVIDIA in 2025-07.
    "licensed": {"h20-96gb"},
    "not-restricted": {
        "l20", "rtx-4090d", "rtx-5090d", "rtx-5090d-v2", "ascend-910b", "ascend-910c",
        "mlu370-x8", "hygon-k100-ai", "kunlunxin-p800",
    },
    "unknown": {"a10"},
}  # fmt: skip


def test_every_card_has_a_dated_sourced_export_status() -> None:
    cards = _cards()
    by_status = {s: {c for c in cards if cards[c].export_cn.status == s} for s in EXPORT_STATUS}
    assert by_status == EXPORT_STATUS
    for cid, card in cards.items():
        status = card.export_cn
        assert status.as_of >= "2025-04", cid  # after the last rule it cites
        assert "http" in status.source or "Form 8-K" in status.source or "§" in status.source
        assert status.note, cid
    rules = {cards[c].export_cn.rule for c in EXPORT_STATUS["restricted"]}
    assert any("2022-10-07" in r for r in rules) and any("2023-10-17" in r for r in rules)
    assert "2025-04" in cards["h20-96gb"].export_cn.rule


# ------------------------------------------------------------------------------ servers


def test_servers_reference_known_cards_and_draw_enough_power() -> None:
    cards = _cards()
    servers = _servers()
    assert len(servers) >= 14
    for server in servers.values():
        assert server.card in cards, server.id
        gpu_kw = server.gpus * cards[server.card].tdp_w / 1000
        assert server.power_kw >= gpu_kw, f"{server.id}: {server.power_kw} kW < GPUs {gpu_kw}"
        assert server.power_kw <= 2.5 * gpu_kw + 1.0, server.id


def test_board_peer_bandwidth_matches_card() -> None:
    cards = _cards()
    for server in _servers().values():
        card = cards[server.card]
        if server.topology in ("nvswitch", "full_mesh"):
            assert server.peer_bandwidth_gbs == card.peer_bandwidth_gbs, server.id
        elif server.topology == "nvlink_bridge_pairs":
            assert card.peer_link == "nvlink_bridge", server.id
            assert server.peer_bandwidth_gbs == card.peer_bandwidth_gbs, server.id
        else:
            assert server.peer_bandwidth_gbs <= 64, server.id


def test_required_server_kinds() -> None:
    servers = list(_servers().values())
    boards = {(s.card, s.topology) for s in servers if s.gpus == 8}
    for card, topology in REQUIRED_BOARDS.items():
        assert (card, topology) in boards, card
    pcie8 = {s.card for s in servers if s.gpus == 8 and s.topology not in REQUIRED_BOARDS.values()}
    assert pcie8 >= REQUIRED_PCIE8
    assert any(s.gpus == 4 and s.rack_units == 2 for s in servers)
    assert any(s.gpus == 4 and s.card in ("h100-sxm", "a100-80gb-sxm") for s in servers)
    assert any(s.gpus <= 2 and s.card == "rtx-4090" for s in servers)
    assert any(s.gpus <= 2 and s.card == "rtx-6000-ada" for s in servers)
    assert any(s.gpus <= 2 and s.card in ("l4", "a10") for s in servers)


def test_server_edge_cases_exist() -> None:
    servers = list(_servers().values())
    assert any(s.cooling == ["liquid"] for s in servers), "no liquid-only server"
    assert any(s.storage_write_gbs < 0.6 for s in servers), "no slow-storage server"
    for s in servers:
        if s.card in ("h100-sxm", "h200-sxm") and s.gpus == 8:
            assert "air" not in s.cooling, s.id


# ------------------------------------------------------------------------------ colocation


def test_colo_coverage() -> None:
    offers = _colo()
    assert len(offers) >= 12
    regions = {o.region for o in offers}
    assert {"jiangsu-south", "jiangsu-north", "shanghai"} <= regions
    assert {o.cooling for o in offers} == {"air", "enhanced_air", "liquid"}
    assert min(o.rack_kw for o in offers) <= 4.4
    assert max(o.rack_kw for o in offers) >= 40
    assert any(o.fabric == "infiniband" for o in offers)
    assert any(o.fabric != "infiniband" for o in offers)
    assert any(o.power_included for o in offers)
    assert any(not o.licences for o in offers), "no unlicensed site for H19"
    assert any(o.cooling == "liquid" and o.racks_available <= 3 for o in offers)


def test_liquid_racks_only_outside_southern_jiangsu() -> None:
    south = [o for o in _colo() if o.region == "jiangsu-south"]
    assert south and all(o.cooling != "liquid" for o in south)
    # Big H100 jobs can still run in the south: a dense air rack with InfiniBand.
    assert any(
        o.cooling == "enhanced_air" and o.rack_kw >= 20 and o.fabric == "infiniband" for o in south
    )


def _fits(server: Server, offer: ColoOffer) -> bool:
    return offer.cooling in server.cooling and offer.rack_kw >= server.power_kw


def test_liquid_only_server_cannot_go_south() -> None:
    liquid_only = [s for s in _servers().values() if s.cooling == ["liquid"]]
    offers = _colo()
    for server in liquid_only:
        assert not any(_fits(server, o) for o in offers if o.region == "jiangsu-south")
        assert any(_fits(server, o) for o in offers if o.region != "jiangsu-south")


def test_every_server_has_a_rack_somewhere() -> None:
    offers = _colo()
    for server in _servers().values():
        assert any(_fits(server, o) for o in offers), server.id


def test_north_is_cheaper_but_farther() -> None:
    offers = _colo()

    def per_kw(region: str) -> float:
        rows = [o for o in offers if o.region == region and not o.power_included]
        return statistics.median(o.rack_price_per_month / o.rack_kw for o in rows)

    def median(region: str, attr: str) -> float:
        return statistics.median(getattr(o, attr) for o in offers if o.region == region)

    assert per_kw("jiangsu-north") < per_kw("jiangsu-south")
    metered = [o for o in offers if not o.power_included]
    north_power = max(o.power_price_per_kwh for o in metered if o.region == "jiangsu-north")
    south_power = min(o.power_price_per_kwh for o in metered if o.region == "jiangsu-south")
    assert north_power <= south_power
    assert median("jiangsu-north", "latency_ms_to_shanghai") > median(
        "jiangsu-south", "latency_ms_to_shanghai"
    )
    assert median("jiangsu-north", "bandwidth_price_per_mbps_month") < median(
        "jiangsu-south", "bandwidth_price_per_mbps_month"
    )
    for o in offers:
        assert 1.1 <= o.pue <= 1.5, o.id
        assert o.power_included == (o.power_price_per_kwh == 0), o.id
        assert o.bgp == (o.bgp_lines > 0), o.id


# ------------------------------------------------------------------------------ cloud


def test_cloud_offers() -> None:
    cards = _cards()
    offers = _load("cloud.yaml").cloud_offers
    assert len(offers) >= 6
    for offer in offers:
        assert offer.card in cards, offer.id
        per_gpu = offer.price_per_hour / offer.gpus_per_instance
        assert 1 <= per_gpu <= 20, offer.id
        if offer.gpus_per_instance == 8 and cards[offer.card].peer_link == "nvlink":
            assert offer.peer_bandwidth_gbs == cards[offer.card].peer_bandwidth_gbs, offer.id
    rented = {o.card for o in offers}
    assert {"rtx-4090", "h20-96gb"} <= rented
    assert rented & {"h800-sxm", "h100-sxm"}
    assert rented & {"a800-80gb-sxm", "a100-80gb-sxm"}
    assert rented & {"l40s", "l20"}
    assert rented & {"a10", "l4"}


# ------------------------------------------------------------------ China market (issue 35)
# Cards and servers added or restated for the China market: every figure dated and sourced.
CN_CARDS = {
    "h20-96gb", "l20", "rtx-4090d", "ascend-910b", "ascend-910c", "mlu370-x8", "rtx-5090d",
    "rtx-5090d-v2", "hygon-k100-ai", "kunlunxin-p800",
}  # fmt: skip
CN_SERVERS = {
    "hgx-h20-8gpu", "pcie8-l20", "atlas-800t-a2", "atlas-800t-a3", "pcie8-rtx4090d",
    "pcie8-mlu370-x8", "pcie8-rtx5090d", "pcie8-rtx5090d-v2", "pcie8-hygon-k100ai",
    "kunlunxin-p800-8oam",
}  # fmt: skip


def test_china_market_items_are_dated_and_ranged() -> None:
    cards, servers = _cards(), _servers()
    for cid in CN_CARDS:
        card = cards[cid]
        assert card.as_of and card.as_of >= "2026-11", cid
        assert card.export_cn is not None and card.export_cn.as_of >= "2026-11", cid
        # Uncertain figures say where the sources disagree, each range dated and sourced.
        if card.confidence == "U":
            assert card.spec_ranges, cid
        for r in card.spec_ranges:
            assert r.as_of and len(r.source) > 10, (cid, r.field)
    for sid in CN_SERVERS:
        server = servers[sid]
        assert server.as_of and server.spec_ranges, sid
        assert server.price_range is not None, sid
        assert server.pricing.illustrative and server.pricing.as_of, sid
        assert server.price_range.low < server.price < server.price_range.high, sid


def test_catalog_validate_checks_figures_against_their_source_ranges(gpusolve, tmp_path) -> None:
    ok = gpusolve("catalog", "validate")
    assert ok.code == 0, ok.err
    ranged = sum(len(c.spec_ranges) for c in _cards().values())
    ranged += sum(len(s.spec_ranges) for s in _servers().values())
    assert f"{ranged} figure(s) within the ranges their sources give" in ok.out
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "currency: CNY\npatch:\n  - id: ascend-910b\n    tflops: {bf16: 500}\n"
        "  - id: atlas-800t-a2\n    price: 2500000\n"
    )
    result = gpusolve("catalog", "validate", str(bad))
    assert result.code == 2
    err = result.err
    assert f"{bad}:3:5" in err and "tflops.bf16 500 is outside the range 256-376" in err
    assert f"{bad}:5:5" in err and "outside its price_range 1,300,000-1,700,000" in err
    # A quote outside the illustrative range is entered with its own range.
    quote = tmp_path / "quote.yaml"
    quote.write_text(
        "currency: CNY\npatch:\n  - id: atlas-800t-a2\n    price: 2500000\n    price_range: null\n"
    )
    assert gpusolve("catalog", "validate", str(quote)).code == 0


# The second China batch (issue 35): GeForce RTX 5090 D / D V2, Hygon K100-AI, Kunlunxin P800.
ADDED_CN_CARDS = ("rtx-5090d", "rtx-5090d-v2", "hygon-k100-ai", "kunlunxin-p800")
ADDED_CN_SERVERS = (
    "pcie8-rtx5090d", "pcie8-rtx5090d-v2", "pcie8-hygon-k100ai", "kunlunxin-p800-8oam",
)  # fmt: skip


@pytest.mark.parametrize("cid", ADDED_CN_CARDS)
def test_added_china_cards_cite_dated_sources_and_range_their_estimates(cid: str) -> None:
    card = _cards()[cid]
    assert card.as_of is not None and card.as_of >= "2026-12", cid
    assert card.export_cn is not None and card.export_cn.as_of >= "2026-12", cid
    # Every card names at least one addressable source (a site or repository path).
    assert any(host in card.source for host in (".com", ".org", ".cn", "github")), cid
    assert card.confidence == "U" and "uncertain" in (card.notes or "").lower(), cid
    ranged = {r.field for r in card.spec_ranges}
    # The figures the physics leans on hardest, where sources differ or it is estimated.
    assert "memory_bandwidth_gbs" in ranged, cid
    assert ranged & {"tflops.bf16", "tdp_w"}, cid
    for r in card.spec_ranges:
        assert r.as_of >= "2026-12" and len(r.source) > 20, (cid, r.field)


@pytest.mark.parametrize("cid", ADDED_CN_CARDS)
def test_added_china_cards_fail_validation_outside_their_source_ranges(cid: str) -> None:
    raw = next(c for c in _data("cards.yaml")["cards"] if c["id"] == cid)
    for r in _cards()[cid].spec_ranges:
        bad = copy.deepcopy(raw)
        parent, _, leaf = r.field.rpartition(".")
        (bad[parent] if parent else bad)[leaf] = r.high * 1.5 + 1
        with pytest.raises(ValidationError, match="outside the range"):
            Card.model_validate(bad)


@pytest.mark.parametrize("sid", ADDED_CN_SERVERS)
def test_added_china_servers_are_estimates_that_say_so(sid: str) -> None:
    server = _servers()[sid]
    assert server.card in ADDED_CN_CARDS
    assert server.as_of is not None and server.as_of >= "2026-12", sid
    assert server.pricing.illustrative and "estimate" in server.pricing.source.lower(), sid
    assert server.price_range is not None, sid
    assert any(r.field == "power_kw" for r in server.spec_ranges), sid
    assert server.notes, sid


def test_not_restricted_nvidia_china_variants_are_under_the_tpp_line() -> None:
    # The export status these cards carry rests on TPP = dense INT8 TOPS x 8 < 4,800.
    for card in _cards().values():
        if card.vendor == "nvidia" and card.export_cn.status == "not-restricted":
            assert card.tflops.int8 is not None and card.tflops.int8 * 8 < 4800, card.id
    # The RTX 5090 D's INT8 is NVIDIA's 2,375 AI TOPS (FP4 with sparsity) / 4.
    assert _cards()["rtx-5090d"].tflops.int8 == pytest.approx(2375 / 4, abs=0.5)


def test_every_shipped_card_has_an_efficiency_family_of_its_own() -> None:
    for card in _cards().values():
        assert family_of(card) in FAMILIES, card.id
    # Without an architecture, the new vendors still map to their families.
    bare = {"hygon-k100-ai": "dcu", "kunlunxin-p800": "xpu", "rtx-5090d": "blackwell_geforce"}
    for cid, family in bare.items():
        card = _cards()[cid].model_copy(update={"architecture": None})
        assert family_of(card) == family, cid
    # Domestic stacks have no public GEMM sweeps: their rows are labelled estimates (H39).
    for family in ("ascend", "mlu", "dcu", "xpu"):
        eff = FAMILIES[family]
        assert eff.source.startswith("estimate") and "H39" in eff.source, family
    assert FAMILIES["dcu"].library == "RCCL" and FAMILIES["xpu"].library == "BKCL"


# A same-load single-card benchmark (Qwen2.5-7B FP16, 512 in / 128 out, vLLM per vendor,
# nine accelerators, 2026-07-10): 1-stream and concurrency-256 output tok/s. The catalogue's
# figures and the families' estimated fractions must not promise more than was measured.
MEASURED_QWEN7B = {"kunlunxin-p800": (86, 3455), "hygon-k100-ai": (40, 1467)}


@pytest.mark.parametrize("cid", sorted(MEASURED_QWEN7B))
def test_domestic_estimates_are_no_more_optimistic_than_a_measured_benchmark(
    cid: str, gpusolve, tmp_path: Path
) -> None:
    reqs = tmp_path / "qwen7b.yaml"
    reqs.write_text(
        "workloads:\n  - name: chat\n    kind: inference\n    model: {preset: qwen2.5-7b}\n"
        "    precision: fp16\n    prompt_tokens: 512\n    output_tokens: 128\n"
        "    concurrency: 256\n"
    )
    result = gpusolve("estimate", str(reqs), "--card", cid, "--gpus", "1", "--format", "json")
    assert result.code == 0, result.err
    config = json.loads(result.out)["workloads"][0]["configs"][0]
    one_stream, peak = MEASURED_QWEN7B[cid]
    assert config["serving"]["single_stream_tokens_per_s"] <= 1.1 * one_stream
    assert config["tokens_per_s"] <= 1.1 * peak
    # ... nor absurdly less: within a factor of two of what was measured.
    assert config["serving"]["single_stream_tokens_per_s"] >= 0.5 * one_stream
    assert config["tokens_per_s"] >= 0.5 * peak
