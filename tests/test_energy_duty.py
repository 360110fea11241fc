"""Energy by duty (issue 24, deliverable 4): owned servers draw busy power for the hours
their workloads run and idle power otherwise. The arithmetic is in each test's comments."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.factories.files import (
    card_entry,
    colo_entry,
    rule_file,
    server_entry,
    write_catalog,
    write_reqs,
)

HORIZON_MONTHS = 36
HORIZON_H = 730 * HORIZON_MONTHS  # 26,280 h
PEAK_KW, IDLE_KW = 10.0, 2.0
BUSY_KW = 0.7 * PEAK_KW  # the requirements' default utilisation x peak
PER_KWH = 1.4 * 0.7  # the test site's PUE x tariff


def _catalog(tmp: Path) -> Path:
    server = server_entry("box", "t80", 8, PEAK_KW, 2_000_000)
    server["idle_power_kw"] = IDLE_KW
    return write_catalog(
        tmp,
        "cat.yaml",
        cards=[card_entry("t80", 80)],
        servers=[server],
        colo_offers=[colo_entry("s", 20)],
    )


def _plan(gpusolve, tmp: Path, workload: dict[str, Any], name: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    reqs = write_reqs(tmp, {"horizon_months": HORIZON_MONTHS, "workloads": [workload]}, name)
    result = gpusolve(
        "plan", "-q", "--format", "json", str(reqs), "--no-default-catalog", "--catalog",
        str(_catalog(tmp)),
    )  # fmt: skip
    assert result.code == 0, result.err + result.out
    data: dict[str, Any] = json.loads(result.out)
    return data


def _finetune(runs: float) -> dict[str, Any]:
    return {
        "name": "ft",
        "kind": "full_finetune",
        "model": {"preset": "llama-2-7b"},
        "tokens": 2e10,  # ~50 h a run: its time printed to 0.01 h is then within 0.01 %
        "runs": runs,
    }


def test_420_busy_hours_are_billed_busy_and_the_rest_idle(gpusolve, tmp_path: Path) -> None:
    # First learn the time one run takes on one server, then ask for as many runs as make
    # 420 h over the three years.
    first = _plan(gpusolve, tmp_path, _finetune(1), "r1.yaml")
    (dep,) = first["deployments"]
    assert dep["servers"] == 1
    runs = 420 / dep["time_to_train_h"]
    plan = _plan(gpusolve, tmp_path, _finetune(runs), "r2.yaml")
    (dep,) = plan["deployments"]
    assert dep["servers"] == 1
    # 420 h at 7 kW and 26,280 - 420 = 25,860 h at 2 kW: 2,940 + 51,720 = 54,660 kWh at the
    # server, x PUE 1.4 x 0.7/kWh = 53,567 CNY (not 7 kW x 26,280 h x 0.98 = 180,281 CNY,
    # as when every hour was billed busy). Rounding: the idle month (2 x 730 x 0.98 =
    # 1,430.8 -> 1,431/month) and the run time printed to 0.01 h give a few CNY.
    expected = (BUSY_KW * 420 + IDLE_KW * (HORIZON_H - 420)) * PER_KWH
    assert abs(plan["cost"]["breakdown"]["energy"] - expected) < 10
    lines = [i for i in plan["cost"]["breakdown"]["items"] if i["kind"] == "energy"]
    idle = next(i for i in lines if i["detail"].startswith("idle"))
    busy = next(i for i in lines if "running" in i["detail"])
    assert idle["quantity"] == HORIZON_MONTHS and idle["unit_price"] == 1431
    # busy: (7 - 2) kW x 420 h x PUE 1.4 = 2,940 kWh above idle, at 0.7/kWh = 2,058 CNY
    assert abs(busy["quantity"] - 2940) < 1 and abs(busy["amount"] - 2058) < 2
    assert busy["unit"] == "kWh" and busy["unit_price"] == 0.7 and busy["source"]


def test_a_day_service_is_busy_for_its_slot_hours(gpusolve, tmp_path: Path) -> None:
    # A service up by day runs 365 h a month: 13,140 h over 36 months at 7 kW, and the
    # other 13,140 h at 2 kW idle: (91,980 + 26,280) kWh x 0.98 = 115,895 CNY.
    service = {
        "name": "chat",
        "kind": "inference",
        "model": {"preset": "llama-2-7b"},
        "precision": "fp16",
        "context_len": 2048,
        "concurrency": 4,
        "target_tokens_per_s": 100,
        "schedule": "day",
    }
    plan = _plan(gpusolve, tmp_path, service, "svc.yaml")
    assert plan["deployments"][0]["servers"] == 1
    day_h = HORIZON_H / 2
    expected = (BUSY_KW * day_h + IDLE_KW * day_h) * PER_KWH
    assert abs(plan["cost"]["breakdown"]["energy"] - expected) < 10


# --- bandwidth by duty -------------------------------------------------------------------


def _service(name: str, schedule: str, mbps: float | None) -> dict[str, Any]:
    w: dict[str, Any] = {
        "name": name,
        "kind": "inference",
        "model": {"preset": "llama-2-7b"},
        "precision": "fp16",
        "context_len": 2048,
        "concurrency": 4,
        "target_tokens_per_s": 100,
        "schedule": schedule,
    }
    if mbps is not None:
        w["bandwidth_mbps"] = mbps
    return w


def _plan_many(gpusolve, tmp: Path, workloads: list[dict[str, Any]]) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    reqs = write_reqs(tmp, {"horizon_months": HORIZON_MONTHS, "workloads": workloads}, "bw.yaml")
    result = gpusolve(
        "plan", "-q", "--format", "json", str(reqs), "--no-default-catalog", "--catalog",
        str(_catalog(tmp)),
    )  # fmt: skip
    assert result.code == 0, result.err + result.out
    data: dict[str, Any] = json.loads(result.out)
    return data


def test_bandwidth_is_the_larger_of_included_and_demand(gpusolve, tmp_path: Path) -> None:
    # The test site includes 100 Mbps at 50/Mbps-month: 5,000/month, 180,000 over 36 months.
    # Without a demand that is all it pays.
    plan = _plan_many(gpusolve, tmp_path, [_service("chat", "always", None)])
    assert plan["cost"]["breakdown"]["bandwidth"] == 100 * 50 * 36
    # A service needing 250 Mbps buys 150 more: 150 x 50 x 36 = 270,000 on top.
    plan = _plan_many(gpusolve, tmp_path, [_service("chat", "always", 250)])
    assert plan["cost"]["breakdown"]["bandwidth"] == 180_000 + 270_000
    extra = [i for i in plan["cost"]["breakdown"]["items"] if i["unit"] == "Mbps for 36 months"]
    assert [(i["quantity"], i["unit_price"], i["amount"]) for i in extra] == [
        (150, 50 * 36, 270_000)
    ]
    # A demand below what is included costs nothing more.
    plan = _plan_many(gpusolve, tmp_path, [_service("chat", "always", 80)])
    assert plan["cost"]["breakdown"]["bandwidth"] == 180_000


def test_day_and_night_demands_share_the_line(gpusolve, tmp_path: Path) -> None:
    # 250 Mbps by day and 180 by night at one site: the busiest slot needs 250, so 150 Mbps
    # beyond the 100 included (not 250 + 180 - 100 = 330): 180,000 + 270,000.
    workloads = [_service("day-chat", "day", 250), _service("night-chat", "night", 180)]
    plan = _plan_many(gpusolve, tmp_path, workloads)
    assert {d["site"] for d in plan["deployments"]} == {"s"}
    assert plan["cost"]["breakdown"]["bandwidth"] == 180_000 + 270_000
    # Both by day: 430 Mbps at once, 330 beyond: 180,000 + 330 x 50 x 36 = 774,000.
    workloads = [_service("day-chat", "day", 250), _service("day-chat-2", "day", 180)]
    plan = _plan_many(gpusolve, tmp_path, workloads)
    assert plan["cost"]["breakdown"]["bandwidth"] == 180_000 + 330 * 50 * 36


def test_a_rule_sets_the_idle_share_of_servers_without_a_figure(gpusolve, tmp_path: Path) -> None:
    # Without idle_power_kw the idle draw is the rule parameter idle_power_fraction x peak.
    # A rule setting it to 0.1 for a day service: idle 1 kW x 730 h x 0.98 = 715.4 -> 715 a
    # month, x 36 = 25,740; and 7 - 1 kW above idle for 13,140 h x 0.98 = 77,263 CNY.
    server = server_entry("box", "t80", 8, PEAK_KW, 2_000_000)
    cards, offers = [card_entry("t80", 80)], [colo_entry("s", 20)]
    cat = write_catalog(tmp_path, "c.yaml", cards=cards, servers=[server], colo_offers=offers)
    rule = {
        "id": "low-idle",
        "source": "H42",
        "title": "Servers idle at a tenth of peak",
        "when": "true",
        "set": {"idle_power_fraction": 0.1},
    }
    service = {
        "name": "chat",
        "kind": "inference",
        "model": {"preset": "llama-2-7b"},
        "precision": "fp16",
        "context_len": 2048,
        "concurrency": 4,
        "target_tokens_per_s": 100,
        "schedule": "day",
    }
    reqs = write_reqs(tmp_path, {"horizon_months": HORIZON_MONTHS, "workloads": [service]})
    result = gpusolve(
        "plan", "-q", "--format", "json", str(reqs), "--no-default-catalog", "--catalog",
        str(cat), "--rules", str(rule_file(tmp_path, rule)),
    )  # fmt: skip
    assert result.code == 0, result.err + result.out
    plan = json.loads(result.out)
    assert plan["cost"]["breakdown"]["energy"] == 25_740 + 77_263


def test_a_workload_may_state_its_own_draw_while_it_runs(gpusolve, tmp_path: Path) -> None:
    # The day service at utilisation 0.4: 4 kW while up, 2 kW idle: 4 - 2 kW above idle for
    # 13,140 h x 0.98 = 25,754 CNY; idle 2 kW x 730 h x 0.98 = 1,430.8 -> 1,431 a month,
    # x 36 = 51,516 CNY.
    service = {
        "name": "chat",
        "kind": "inference",
        "model": {"preset": "llama-2-7b"},
        "precision": "fp16",
        "context_len": 2048,
        "concurrency": 4,
        "target_tokens_per_s": 100,
        "schedule": "day",
        "utilisation": 0.4,
    }
    plan = _plan(gpusolve, tmp_path, service, "u.yaml")
    assert plan["cost"]["breakdown"]["energy"] == 51_516 + 25_754
