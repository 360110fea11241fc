"""`gpusolve rules list/show/check/explain/fields`, and user rule files end to end."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.factories.files import write_file

from gpusolve.load import load_catalog

EXAMPLE = """\
# yaml-language-server: $schema=../schemas/rules.schema.json
rules:
  - id: full-ft-13b-prefers-80gb
    source: H41
    title: Full fine-tune of 13B or more — 80 GB cards first
    when: workload.kind == "full_finetune" && workload.model.params_b >= 13.0
    require:
      card: card.memory_gb >= 80.0
"""

REQS = """\
workloads:
  - name: ft-13b
    kind: full_finetune
    model: {params_b: 13}
    tokens: 1.0e9
  - name: ft-7b
    kind: full_finetune
    model: {params_b: 7}
    tokens: 1.0e9
"""


def explain_json(gpusolve: Callable[..., Any], *args: str) -> dict[str, Any]:
    result = gpusolve("rules", "explain", *args, "--format", "json")
    assert result.code == 0, result.err
    data: dict[str, Any] = json.loads(result.out)
    return data


def by_name(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {w["workload"]: w for w in data["workloads"]}


def test_example_rule_from_a_user_file(tmp_path: Path, gpusolve: Callable[..., Any]) -> None:
    rules = write_file(tmp_path, EXAMPLE, "mine.yaml")
    reqs = write_file(tmp_path, REQS, "reqs.yaml")
    data = by_name(explain_json(gpusolve, str(reqs), "--rules", str(rules)))
    small = {c.id for c in load_catalog().catalog.cards.values() if c.memory_gb < 80}

    def removals(w: str) -> list[str]:
        return [
            i
            for r in data[w]["removed"]
            if r["rule"] == "full-ft-13b-prefers-80gb" and r["kind"] == "card"
            for i in r["removed"]
        ]

    assert set(removals("ft-13b")) == small
    assert removals("ft-7b") == []
    entry = next(t for t in data["ft-13b"]["trace"] if t["rule"] == "full-ft-13b-prefers-80gb")
    assert entry["source"] == "H41"
    assert entry["where"].startswith(str(rules))
    assert "full-ft-13b-prefers-80gb" not in [t["rule"] for t in data["ft-7b"]["trace"]]
    text = gpusolve("rules", "explain", str(reqs), "--rules", str(rules))
    assert text.code == 0
    assert re.search(r"full-ft-13b-prefers-80gb \(H41\) cards: .*a100-40gb-sxm", text.out)


def test_headroom_for_every_workload_and_disable(
    tmp_path: Path, gpusolve: Callable[..., Any]
) -> None:
    reqs = write_file(tmp_path, REQS, "reqs.yaml")
    plain = by_name(explain_json(gpusolve, str(reqs)))
    assert plain["ft-7b"]["params"]["headroom"] == 0.2
    assert "h05-model-state-bytes" in [t["rule"] for t in plain["ft-7b"]["trace"]]
    mine = write_file(
        tmp_path,
        "disable: [h05-model-state-bytes]\n"
        "rules:\n"
        "  - id: our-headroom\n"
        "    source: H29\n"
        "    title: We keep 30% free on every GPU\n"
        "    set: {headroom: 0.3}\n",
        "ours.yaml",
    )
    data = explain_json(gpusolve, str(reqs), "--rules", str(mine))
    assert data["rules"]["disabled"] == {"h05-model-state-bytes": f"{mine}:1"}
    for w in data["workloads"]:
        assert w["params"]["headroom"] == 0.3
        assert w["param_origin"]["headroom"] == "our-headroom"
        rules = [t["rule"] for t in w["trace"]]
        assert "h05-model-state-bytes" not in rules
        assert "our-headroom" in rules


BAD_FILES: list[tuple[str, str, str, str]] = [
    # (name, file text, rule id expected in the message, message fragment)
    (
        "bad-cel",
        "rules:\n  - id: oops\n    source: H05\n    title: bad syntax\n"
        '    when: workload.kind == "lora" &&\n    advise: hi\n',
        "oops",
        "CEL syntax error",
    ),
    (
        "unknown-field",
        'rules:\n  - id: typo\n    source: H41\n    title: a typo\n    when: "true"\n'
        "    require:\n      card: card.memory_gbb >= 80\n",
        "typo",
        "unknown field 'memory_gbb'",
    ),
    (
        "unknown-param",
        "rules:\n  - id: knob\n    source: H29\n    title: unknown knob\n"
        "    set: {head_room: 0.3}\n",
        "knob",
        "unknown parameter 'head_room'",
    ),
    (
        "duplicate",
        "rules:\n  - id: h19-licensed-provider\n    source: H19\n    title: my version\n"
        "    advise: hello\n",
        "h19-licensed-provider",
        "duplicate rule id",
    ),
    (
        "wrong-type",
        "rules:\n  - id: typed\n    source: H29\n    title: wrong type\n"
        "    set: {headroom: lots}\n",
        "typed",
        "headroom",
    ),
    (
        "wrong-type-schema",
        "rules:\n  - id: typed2\n    source: H19\n    title: wrong type\n    prefer:\n"
        "      offer: {expr: offer.bgp, penalty: lots}\n",
        "typed2",
        "penalty",
    ),
    (
        "param-range",
        "rules:\n  - id: ranged\n    source: H29\n    title: out of range\n"
        "    set: {headroom: 1.5}\n",
        "ranged",
        "at most",
    ),
    (
        "deep",
        'rules:\n  - id: deep\n    source: H05\n    title: very deep\n    when: "'
        + "(" * 10_000
        + "true"
        + ")" * 10_000
        + '"\n    advise: hi\n',
        "deep",
        "rules.0.when",
    ),
    (
        "deep-short",
        'rules:\n  - id: deep2\n    source: H05\n    title: deep but short\n    when: "'
        + "(" * 1500
        + "true"
        + ")" * 1500
        + '"\n    advise: hi\n',
        "deep2",
        "nested more than",
    ),
    (
        "null-unguarded",
        "rules:\n  - id: unguarded\n    source: H17\n    title: unguarded null\n"
        "    when: workload.deadline_hours >= 168\n    advise: long\n",
        "unguarded",
        "may be null",
    ),
    (
        "bad-source",
        "rules:\n  - id: nosource\n    source: H99\n    title: bad source\n    advise: x\n",
        "nosource",
        "source",
    ),
    (
        "bad-template",
        "rules:\n  - id: tmpl\n    source: H05\n    title: bad template\n"
        '    advise: "{workload.model.params}"\n',
        "tmpl",
        "unknown field 'params'",
    ),
    (
        "no-effect",
        "rules:\n  - id: idle\n    source: H05\n    title: no effect\n",
        "idle",
        "at least one effect",
    ),
]


@pytest.mark.parametrize(
    ("name", "text", "rule_id", "needle"), BAD_FILES, ids=[b[0] for b in BAD_FILES]
)
def test_malformed_rule_files_exit_2_with_location_and_rule(
    tmp_path: Path, gpusolve: Callable[..., Any], name: str, text: str, rule_id: str, needle: str
) -> None:
    path = write_file(tmp_path, text, f"{name}.yaml")
    commands = [("rules", "check", str(path))]
    if name in ("bad-cel", "duplicate"):  # the same loader behind every command's --rules
        commands.append(("rules", "list", "--rules", str(path)))
    for args in commands:
        result = gpusolve(*args)
        assert result.code == 2, result.out + result.err
        assert "Traceback" not in result.err
        assert re.search(re.escape(str(path)) + r":\d+", result.err), result.err
        assert f"[rule {rule_id}]" in result.err, result.err
        assert needle in result.err, result.err
        assert len(result.err) < 2000, "messages stay one screen"


def test_check_ok(tmp_path: Path, gpusolve: Callable[..., Any]) -> None:
    path = write_file(tmp_path, EXAMPLE, "mine.yaml")
    result = gpusolve("rules", "check", str(path))
    assert result.code == 0, result.err
    assert "ok:" in result.out and "1 rule(s) (1 new, 0 replacing shipped)" in result.out


def test_list_and_filter(gpusolve: Callable[..., Any]) -> None:
    result = gpusolve("rules", "list", "--source", "h13")
    assert result.code == 0
    assert result.out.count(" H13 ") == 4
    data = json.loads(gpusolve("rules", "list", "--format", "json").out)
    ids = [r["id"] for r in data["rules"]]
    assert "h41-full-finetune-13b-80gb" in ids and len(ids) == len(set(ids))
    assert all(r["shipped"] for r in data["rules"])
    assert gpusolve("rules", "list", "--source", "13x").code == 2


def test_show(gpusolve: Callable[..., Any]) -> None:
    result = gpusolve("rules", "show", "h41-full-finetune-13b-80gb")
    assert result.code == 0
    assert "memory.yaml" in result.out
    assert "require card: card.memory_gb >= 80.0" in result.out
    assert "document B" in result.out  # the heuristic's summary from heuristics.yaml
    data = json.loads(
        gpusolve("rules", "show", "h29-mixed-schedule-headroom", "--format", "json").out
    )
    assert data["heuristic"]["id"] == "H29"
    assert data["set"] == {"headroom": 0.25}
    missing = gpusolve("rules", "show", "h41-full-finetune-13b-80g")
    assert missing.code == 2
    assert "Did you mean: h41-full-finetune-13b-80gb" in missing.err


def test_explain_text_sections(gpusolve: Callable[..., Any]) -> None:
    example = Path(__file__).parents[1] / "examples" / "chat-day-lora-night.yaml"
    result = gpusolve("rules", "explain", str(example))
    assert result.code == 0, result.err
    out = result.out
    assert "workload chat-13b" in out and "workload lora-7b" in out
    assert "headroom = 0.25 (h29-mixed-schedule-headroom)" in out
    assert "need a layout; checked when planning, not here" in out
    assert "advice:" in out


def test_fields(gpusolve: Callable[..., Any]) -> None:
    result = gpusolve("rules", "fields", "--kind", "server")
    assert result.code == 0
    assert "server.cpu.pcie_lanes" in result.out
    assert "workload.deadline_hours" in result.out and "or null" in result.out
