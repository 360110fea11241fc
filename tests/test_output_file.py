"""-o: whole or not at all, only on success, never over an input, the user's mode, through
symlinks (issue 22)."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.support.shipped import ROOT

from gpusolve.atomic import write_text_atomic
from gpusolve.errors import InputError

EXAMPLE = ROOT / "examples" / "finetune-7b-deadline.yaml"
FLEET = ROOT / "examples" / "fleets" / "h100-training-cluster.yaml"
TINY = ROOT / "tests" / "corpus" / "requirements" / "beyond-horizon.yaml"  # exit 1


def test_output_naming_the_requirements_file_is_refused(gpusolve: Any, tmp_path: Path) -> None:
    reqs = tmp_path / "reqs.yaml"
    reqs.write_bytes(EXAMPLE.read_bytes())
    result = gpusolve("plan", "-q", str(reqs), "-o", str(reqs))
    assert result.code == 2 and "input file" in result.err
    assert reqs.read_bytes() == EXAMPLE.read_bytes()


def test_output_through_a_symlink_to_an_input_is_refused(gpusolve: Any, tmp_path: Path) -> None:
    link = tmp_path / "out.txt"
    link.symlink_to(FLEET)
    result = gpusolve("colo", str(FLEET), "-o", str(link))
    assert result.code == 2 and "input file" in result.err


def test_output_into_a_missing_folder_is_an_input_error(gpusolve: Any, tmp_path: Path) -> None:
    result = gpusolve("plan", "-q", str(EXAMPLE), "-o", str(tmp_path / "no" / "such" / "p.json"))
    assert result.code == 2 and "does not exist" in result.err
    assert "Traceback" not in result.err


def test_infeasible_run_leaves_an_existing_output_alone(gpusolve: Any, tmp_path: Path) -> None:
    out = tmp_path / "plan.txt"
    out.write_text("the last good plan\n")
    result = gpusolve("plan", str(TINY), "-o", str(out), "--time-limit", "2")
    assert result.code == 1
    assert out.read_text() == "the last good plan\n"
    assert "No feasible plan" in result.out and "left as it was" in result.err


def test_replaced_file_keeps_its_mode(tmp_path: Path) -> None:
    out = tmp_path / "plan.txt"
    out.write_text("old")
    out.chmod(0o644)
    write_text_atomic(out, "new")
    assert out.read_text() == "new"
    assert stat.S_IMODE(out.stat().st_mode) == 0o644


def test_new_file_follows_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o027)
    try:
        write_text_atomic(tmp_path / "a.txt", "x")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o640


def test_symlink_is_followed_and_kept(tmp_path: Path) -> None:
    target = tmp_path / "real.txt"
    target.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    write_text_atomic(link, "new")
    assert link.is_symlink() and target.read_text() == "new"


def test_missing_folder_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        write_text_atomic(tmp_path / "nope" / "x.txt", "x")
    assert not (tmp_path / "nope").exists()


def test_no_temporary_file_is_left_behind(gpusolve: Any, tmp_path: Path) -> None:
    out = tmp_path / "colo.txt"
    result = gpusolve("colo", str(FLEET), "-o", str(out))
    assert result.code == 0 and out.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["colo.txt"]


@pytest.mark.parametrize("old", [True, False], ids=["existing-file", "no-file"])
def test_kill_9_mid_solve_leaves_the_old_file_or_none(tmp_path: Path, old: bool) -> None:
    """SIGKILL cannot be caught: only the write-then-rename keeps -o whole. Killed while
    it solves, the file is the old one (or absent), never a partial plan."""
    out = tmp_path / "plan.json"
    if old:
        out.write_text("old plan\n")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gpusolve",
            "plan",
            str(EXAMPLE),
            "-o",
            str(out),
            "--format",
            "json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    try:
        end = time.monotonic() + 120
        while time.monotonic() < end:
            line = proc.stderr.readline()
            if "building candidates" in line or "solving" in line or not line:
                break
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == -signal.SIGKILL
    if old:
        assert out.read_text() == "old plan\n"
    else:
        assert not out.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name != "plan.json"] == []
