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

# The largest log read: about three days of 1-second `nvidia-smi dmon` samples of eight GPUs
# (~80 bytes a line); a device such as /dev/zero never ends and must not fill the memory.
MAX_LOG_BYTES = 200 * 1000 * 1000


def analyse_file(path: Path, card: Card | None, params: Params) -> ProfileReport:
    """Read and analyse one log file; a missing or unreadable file is an InputError."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(MAX_LOG_BYTES + 1)  # a device or a pipe may never end
    except OSError as exc:
        raise InputError.single(
            str(path), f"cannot read the log: {exc.strerror}", hint="give an existing file"
        ) from None
    if len(raw) > MAX_LOG_BYTES:
        raise InputError.single(
            str(path),
            f"the log is larger than {MAX_LOG_BYTES / 1e6:.0f} MB",
            hint="log a sample every 10 s (`nvidia-smi dmon -d 10`) or split the log",
        )
    text = raw.decode("utf-8", errors="replace")
    return profile(read_log(text, str(path)), card, params)
