"""Write output files whole or not at all: a failed run never leaves half a file."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

from gpusolve.errors import InputError


def write_text_atomic(path: Path, text: str) -> None:
    """A user's output (-o, schemas): the mode of the file it replaces, else the umask."""
    write_bytes_atomic(path, text.encode("utf-8"), private=False)


def write_bytes_atomic(path: Path, data: bytes, *, private: bool = True) -> None:
    """Write to a temporary file beside the target, flush it to disk, then rename it over.

    A symlink is followed, so its target is replaced and the link kept. A private file
    (caches: pickles are only ever read back from the user's own 0600 files) stays 0600;
    otherwise the result gets the mode of the file it replaces, or the user's umask for a
    new file (mkstemp alone would leave it 0600), and a read-only file is not replaced. A
    missing folder is an input error.
    """
    target = Path(os.path.realpath(path))
    folder = target.parent
    if not private:
        check_replaceable(path)
    if not folder.is_dir():
        raise InputError.single(
            str(path),
            f"the folder {folder} does not exist",
            hint="create it first or choose another output file",
        )
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.")
    except OSError as exc:
        raise InputError.single(str(path), f"cannot write here: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())  # whole on disk before it takes the name (kill -9, power)
        if not private:
            os.chmod(tmp, _mode_for(target))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_replaceable(path: Path) -> None:
    """Refuse to replace an existing file made read-only. Renaming over a file needs only
    the folder's permission, so a read-only -o file would be silently replaced; the
    mode bits are read as well as access(2), which grants root everything."""
    target = Path(os.path.realpath(path))
    try:
        mode = target.stat().st_mode
    except OSError:  # no such file yet (or unreadable: the write itself will say)
        return
    if stat.S_ISREG(mode) and (not mode & 0o222 or not os.access(target, os.W_OK)):
        raise InputError.single(
            str(path),
            "the file is read-only: gpusolve does not replace it",
            hint="make it writable (chmod u+w) or choose another output file",
        )


def _mode_for(target: Path) -> int:
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
