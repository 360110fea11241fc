"""Layout searches shared within a block (`candidates/layout_memo.py`): the periods of a
schedule ask the same search once; a search never reads how many runs a workload repeats,
so runs aside the same inputs give the same answer, and anything else searches again."""

from __future__ import annotations

from typing import Any

import pytest
from tests.support.shipped import ROOT

from gpusolve.candidates import layout_memo
from gpusolve.candidates.layout_memo import layouts, shared_layouts
from gpusolve.estimate.hardware import Hardware
from gpusolve.plan.inputs import prepare_run


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    seen: list[Any] = []
    real = layout_memo.search_layouts

    def counted(*args: Any, **kwargs: Any) -> Any:
        seen.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(layout_memo, "search_layouts", counted)
    return seen


def test_the_same_search_within_a_block_is_run_once_whatever_the_runs(calls: list[Any]) -> None:
    run = prepare_run(ROOT / "examples" / "finetune-7b-deadline.yaml", [], [])
    w = run.reqs.workloads[0]
    server = next(s for s in run.catalog.servers.values() if s.gpus == 8)
    hw = Hardware.from_server(server, run.catalog.cards[server.card])
    params = run.policies[w.name].params
    again = w.model_copy(update={"runs": w.runs * 4})
    later = w.model_copy(update={"deadline_hours": (w.deadline_hours or 100) * 2})
    with shared_layouts():
        first = layouts(w, hw, params, max_nodes=2, every_size=True)
        assert layouts(again, hw, params, max_nodes=2, every_size=True) is first
        assert len(calls) == 1
        layouts(later, hw, params, max_nodes=2, every_size=True)  # another deadline
        layouts(w, hw, params, max_nodes=1, every_size=True)  # other options
        assert len(calls) == 3
    layouts(w, hw, params, max_nodes=2, every_size=True)  # outside the block: searched again
    assert len(calls) == 4
