"""Documents already found valid against their JSON Schema, remembered by digest.

For a valid document the schema pass has one outcome, "valid", and it costs the same every
run: about a tenth of `gpusolve plan` on a shipped example (importing jsonschema and walking
the catalogue's schema; benchmarks/README.md, "Last results"). So the digest of each valid
(schema, document) pair is kept in the user's private cache directory, and a pair seen
before skips the pass. Any change to the document or to the schema is a new digest, so the
pass runs again on it; an invalid document is never remembered and always gets its located
errors. Pydantic still builds and checks every model on every run.

Only hex digests are stored, one per line (text, never a pickle); a missing, unreadable or
foreign file is an empty cache, and failing to write it never fails a run.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
from pathlib import Path

# Digests kept: a run reads a handful of documents (catalogue files, requirements, rules).
_MAX = 256
_FILE = "valid-documents.txt"


def user_cache_dir() -> Path | None:
    """`$XDG_CACHE_HOME/gpusolve` (else `~/.cache/gpusolve`), created 0700; None when it
    cannot be created or written (the caches are then simply not kept)."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "gpusolve"
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError:
        return None
    return root if os.access(root, os.W_OK) else None


def digest(schema_bytes: bytes, data: object) -> str:
    """The pair's digest. `repr` of the parsed data: the YAML loader builds plain dicts,
    lists, strings, numbers, booleans and None, whose repr is deterministic."""
    h = hashlib.sha256(schema_bytes)
    h.update(b"\0")
    h.update(repr(data).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


class _Seen:
    def __init__(self) -> None:
        self._known: dict[str, None] | None = None
        self._new: dict[str, None] = {}

    def _load(self) -> dict[str, None]:
        if self._known is None:
            self._known = {}
            folder = user_cache_dir()
            if folder is not None:
                with contextlib.suppress(OSError, UnicodeDecodeError):
                    lines = (folder / _FILE).read_text(encoding="ascii").split()
                    self._known = {d: None for d in lines if _is_digest(d)}
        return self._known

    def __contains__(self, key: str) -> bool:
        return key in self._new or key in self._load()

    def add(self, key: str) -> None:
        if not self._new:
            atexit.register(self.save)
        self._new[key] = None

    def save(self) -> None:
        folder = user_cache_dir()
        if folder is None or not self._new:
            return
        from gpusolve.atomic import write_bytes_atomic

        merged = [d for d in self._load() if d not in self._new] + list(self._new)
        text = "\n".join(merged[-_MAX:]) + "\n"
        with contextlib.suppress(OSError):
            write_bytes_atomic(folder / _FILE, text.encode("ascii"))


def _is_digest(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


VALID = _Seen()
