"""Small-file I/O for the lexical index's sidecar files (``lexical.json``, ``state.json``).

Writes are atomic and durable: the text goes to a temporary file in the same directory,
which is fsynced, renamed over the target with ``os.replace`` and the directory fsynced,
so a reader sees the old file or the new one, never half of one, also after a crash.
Reads tell a missing file (``None``) apart from an unreadable or garbled one
(:class:`StoreError`). :func:`stat_signature` lets a reader notice cheaply that a file
was replaced. :func:`local_path` checks a path a caller passed before anything uses it.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import InvalidInputError, StoreError

__all__ = ["local_path", "read_json", "stat_signature", "write_json_atomic", "write_text_atomic"]


def local_path(value: object, what: str) -> Path:
    """``value`` (a ``str`` or ``os.PathLike[str]``) as an absolute :class:`Path`.

    Raises :class:`InvalidInputError` naming ``what`` for anything else: another type,
    bytes (decode them first), an empty string, a NUL character."""
    text: object = value
    if isinstance(value, os.PathLike):
        try:
            text = os.fspath(value)
        except Exception as exc:
            msg = f"{what} {value!r:.80} does not give a file system path ({exc})"
            raise InvalidInputError(msg) from exc
    if isinstance(text, (bytes, bytearray)):
        msg = (
            f"{what} must be a str or pathlib.Path, got bytes {value!r:.80}; decode it "
            "first (os.fsdecode(path))"
        )
        raise InvalidInputError(msg)
    if not isinstance(text, str):
        msg = (
            f"{what} must be a directory path (str or pathlib.Path), got "
            f"{type(value).__name__} {value!r:.80}"
        )
        raise InvalidInputError(msg)
    if not text:
        msg = f"{what} is empty; pass a directory such as './remy_data'"
        raise InvalidInputError(msg)
    if "\0" in text:
        msg = f"{what} {text!r:.200} contains a NUL character, which no file name can hold"
        raise InvalidInputError(msg)
    try:
        return Path(text).resolve()
    except (OSError, RuntimeError) as exc:  # e.g. a symlink loop
        msg = f"{what} {text!r:.200} cannot be resolved ({exc}); check the path"
        raise InvalidInputError(msg) from exc


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
        _fsync_dir(path.parent)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        msg = f"cannot write {path}: {exc}"
        raise StoreError(msg) from exc


def _fsync_dir(directory: Path) -> None:
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
