"""Small-file I/O for the lexical index's sidecar files (``lexical.json``, ``state.json``).

Writes are atomic and durable: the text goes to a temporary file in the same directory,
which is fsynced, renamed over the target with ``os.replace`` and the directory fsynced,
so a reader sees the old file or the new one, never half of one, also after a crash.
Reads tell a missing file (``None``) apart from an unreadable or garbled one
(:class:`StoreError`). :func:`stat_signature` lets a reader notice cheaply that a file
was replaced.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ..util.paths import fsync_dir

__all__ = ["read_json", "stat_signature", "write_json_atomic", "write_text_atomic"]


def stat_signature(path: str) -> tuple[int, int, int] | None:
    """``(inode, mtime in ns, size)`` of ``path``, or ``None`` when it does not exist; a
    replaced or rewritten file gets a different signature."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def read_json(path: Path) -> Any:
    """The JSON value in ``path``, or ``None`` when the file does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        msg = f"cannot read {path}: {exc}"
        raise StoreError(msg) from exc
    try:
        return json.loads(text)
    except ValueError as exc:
        msg = f"{path} is not valid JSON ({exc}); delete it and rebuild the lexical index"
        raise StoreError(msg) from exc


def write_json_atomic(path: Path, data: Mapping[str, Any]) -> None:
    """Atomically replace ``path`` with ``data`` as JSON (keys sorted)."""
    write_text_atomic(path, json.dumps(data, sort_keys=True))


def write_text_atomic(path: Path, text: str) -> None:
    """Write via a temporary file, fsync, then ``os.replace``: readers never see half."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        msg = f"cannot write {path}: {exc}"
        raise StoreError(msg) from exc
