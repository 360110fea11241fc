"""nvidia-smi logs: `read_log` (logs.py) parses dmon and CSV logs by their headers,
`profile` (analysis.py) summarises and classifies them (H04, H11, H17, H29)."""

from __future__ import annotations

from pathlib import Path

from gpusolve.errors import InputError
from gpusolve.models.catalog import Card
from gpusolve.models.params import Params
from gpusolve.models.profile import ProfileReport
from gpusolve.profile.analysis import profile
from gpusolve.profile.logs import Log, Sample, read_log

__all__ = ["Log", "Sample", "analyse_file", "profile", "read_log"]


def analyse_file(path: Path, card: Card | None, params: Params) -> ProfileReport:
    """Read and analyse one log file; a missing or unreadable file is an InputError."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise InputError.single(
            str(path), f"cannot read the log: {exc.strerror}", hint="give an existing file"
        ) from None
    return profile(read_log(text, str(path)), card, params)
