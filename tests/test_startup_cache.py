"""Layout searches kept between runs of the command (`candidates/layout_cache.py`): a run
reads back exactly what an earlier run computed for the same inputs and code, searches
again for anything else (other inputs, an edited package, an unreadable file), and the
library outside the command never touches the disk."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.support.shipped import ROOT

from gpusolve.candidates import layout_cache, layout_memo
from gpusolve.candidates.layout_memo import layouts
from gpusolve.estimate.hardware import Hardware
from gpusolve.plan.inputs import prepare_run

FINETUNE = ROOT / "examples" / "finetune-7b-deadline.yaml"


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private cache directory, and nothing of another test's run left to save."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    layout_cache._new.clear()
    yield tmp_path / "gpusolve" / "layouts"
    layout_cache._new.clear()


@pytest.fixture
def searches(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every layout search actually run."""
    seen: list[Any] = []
    real = layout_memo.search_layouts

    def counted(*args: Any, **kwargs: Any) -> Any:
        seen.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(layout_memo, "search_layouts", counted)
    return seen


def _inputs() -> tuple[Any, Hardware, Any]:
    run = prepare_run(FINETUNE, [], [])
    w = run.reqs.workloads[0]
    server = next(s for s in run.catalog.servers.values() if s.gpus == 8)
    hw = Hardware.from_server(server, run.catalog.cards[server.card])
    return w, hw, run.policies[w.name].params


def _next_run() -> None:
    """What ends one process and starts the next: the searches written, none in memory."""
    layout_cache.save()
    layout_cache._new.clear()


def test_outside_the_command_nothing_is_kept(cache_home: Path, searches: list[Any]) -> None:
    w, hw, params = _inputs()
    first = layouts(w, hw, params, max_nodes=2, every_size=True)
    _next_run()
    assert layouts(w, hw, params, max_nodes=2, every_size=True) == first
    assert len(searches) == 2 and not cache_home.exists()


def test_a_later_run_reads_the_same_answer(cache_home: Path, searches: list[Any]) -> None:
    w, hw, params = _inputs()
    with layout_cache.kept_between_runs():
        first = layouts(w, hw, params, max_nodes=2, every_size=True)
        _next_run()
        assert len(list(cache_home.iterdir())) == 1
        again = layouts(w, hw, params, max_nodes=2, every_size=True)
        assert len(searches) == 1  # read back, not searched
        assert again == first and again is not first
        # The runs of a workload are not an input of the search (`layout_memo`).
        more = w.model_copy(update={"runs": w.runs * 3})
        assert layouts(more, hw, params, max_nodes=2, every_size=True) == first
        assert len(searches) == 1


def test_other_inputs_or_other_code_search_again(
    cache_home: Path, searches: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    w, hw, params = _inputs()
    later = w.model_copy(update={"deadline_hours": (w.deadline_hours or 100) * 2})
    with layout_cache.kept_between_runs():
        layouts(w, hw, params, max_nodes=2, every_size=True)
        _next_run()
        layouts(w, hw, params, max_nodes=1, every_size=True)  # another node limit
        layouts(later, hw, params, max_nodes=2, every_size=True)  # another deadline
        layouts(w, hw, params, max_nodes=2, every_size=False)  # the first size only
        assert len(searches) == 4
        # An edited package: every key changes, nothing stale is read.
        monkeypatch.setattr(layout_cache, "code_fingerprint", lambda: "edited")
        layouts(w, hw, params, max_nodes=2, every_size=True)
        assert len(searches) == 5


def test_an_unreadable_file_is_a_miss(cache_home: Path, searches: list[Any]) -> None:
    w, hw, params = _inputs()
    with layout_cache.kept_between_runs():
        first = layouts(w, hw, params, max_nodes=2, every_size=True)
        _next_run()
        (stored,) = cache_home.iterdir()
        stored.write_bytes(b"not a pickle")
        assert layouts(w, hw, params, max_nodes=2, every_size=True) == first
        assert len(searches) == 2


def test_the_fingerprint_follows_every_source_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    source = tmp_path / "sub" / "search.py"
    source.write_text("x = 1\n")
    (tmp_path / "notes.txt").write_text("not code")
    before = layout_cache.files_fingerprint(tmp_path, "1.0")
    assert layout_cache.files_fingerprint(tmp_path, "1.0") == before
    assert layout_cache.files_fingerprint(tmp_path, "1.1") != before  # another version
    (tmp_path / "notes.txt").write_text("other notes")
    assert layout_cache.files_fingerprint(tmp_path, "1.0") == before  # not a source file
    stat = source.stat()
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # edited
    assert layout_cache.files_fingerprint(tmp_path, "1.0") != before
    touched = layout_cache.files_fingerprint(tmp_path, "1.0")
    source.write_text("x = 22\n")  # a new size
    assert layout_cache.files_fingerprint(tmp_path, "1.0") != touched


def test_plan_twice_gives_the_same_output_the_second_without_searching(
    gpusolve: Any, cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = gpusolve("plan", "-q", str(FINETUNE), "--format", "json")
    assert first.code == 0, first.err
    _next_run()
    assert any(cache_home.iterdir())
    seen: list[Any] = []
    monkeypatch.setattr(layout_memo, "search_layouts", lambda *a, **k: seen.append(a))
    second = gpusolve("plan", "-q", str(FINETUNE), "--format", "json")
    assert second.code == 0 and second.out == first.out
    assert seen == []
