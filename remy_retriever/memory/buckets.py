"""Profile bucket definitions, per container: the names (and descriptions) a container's
profile groups its memories under (supermemory v5's ``/profile/buckets``).

Definitions only name and describe buckets: remy has no language model to classify a
memory by a description, so a memory joins a bucket through its metadata ``bucket``
(:data:`~.listing.BUCKET_KEY`), and a profile asked for without naming buckets shows the
container's defined ones (:func:`profile_buckets`).

Storage: one JSON file beside the memory collection's writer lock
(:func:`~remy_retriever.retriever.local_dir`), ``profile_buckets/<collection>.json``,
mapping each container to its definitions; it is read afresh on every call and
rewritten whole (atomically) under the memory collection's writer lock. Bounded: at most
:data:`MAX_BUCKETS` per container, names of at most :data:`MAX_NAME` characters (letters,
digits, ``_ - . :`` and spaces), descriptions of at most :data:`MAX_DESCRIPTION`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..errors import InvalidInputError, StoreError
from ..retriever import local_dir
from ..util.reprs import short_repr
from .store import MemoryStore

__all__ = [
    "MAX_BUCKETS",
    "MAX_DESCRIPTION",
    "MAX_NAME",
    "define_buckets",
    "defined_buckets",
    "profile_buckets",
    "remove_buckets",
]

#: The most buckets one container defines.
MAX_BUCKETS = 50
#: The longest bucket name.
MAX_NAME = 64
#: The longest bucket description.
MAX_DESCRIPTION = 1000
_NAME = re.compile(r"[A-Za-z0-9_\-.: ]+")
_DIR = "profile_buckets"


def _path(store: MemoryStore) -> Path:
    return local_dir(store.memories) / _DIR / f"{store.memories.collection}.json"


def _read(store: MemoryStore) -> dict[str, dict[str, str]]:
    path = _path(store)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        msg = f"cannot read the profile bucket definitions {str(path)!r}: {exc}; remove the file"
        raise StoreError(msg) from None
    if not isinstance(raw, dict):
        msg = f"the profile bucket definitions {str(path)!r} are damaged; remove the file"
        raise StoreError(msg)
    return {
        str(tag): {str(k): str(v) for k, v in defs.items()}
        for tag, defs in raw.items()
        if isinstance(defs, dict)
    }


def _write(store: MemoryStore, table: Mapping[str, Mapping[str, str]]) -> None:
    path = _path(store)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(table, sort_keys=True), encoding="utf-8")
    os.replace(temporary, path)


def _check_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name) or len(name) > MAX_NAME:
        msg = (
            f"bucket name {short_repr(name)} is not 1-{MAX_NAME} letters, digits, "
            "'_', '-', '.', ':' or spaces; rename it"
        )
        raise InvalidInputError(msg)
    return name


def defined_buckets(store: MemoryStore, tag: str) -> dict[str, str]:
    """Container ``tag``'s bucket definitions, name to description, sorted by name."""
    return dict(sorted(_read(store).get(tag, {}).items()))


def define_buckets(store: MemoryStore, tag: str, buckets: Mapping[str, str]) -> dict[str, str]:
    """Add or redescribe these buckets of container ``tag`` (the others stay); returns
    its definitions."""
    for name, description in buckets.items():
        _check_name(name)
        if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
            msg = (
                f"the description of bucket {name!r} must be a string of at most "
                f"{MAX_DESCRIPTION} characters; shorten it"
            )
            raise InvalidInputError(msg)
    with store.memories.writing():
        table = _read(store)
        mine = {**table.get(tag, {}), **buckets}
        if len(mine) > MAX_BUCKETS:
            msg = (
                f"container {tag!r} would define {len(mine)} profile buckets, more than "
                f"{MAX_BUCKETS}; delete some first"
            )
            raise InvalidInputError(msg)
        table[tag] = mine
        _write(store, table)
    return dict(sorted(mine.items()))


def remove_buckets(store: MemoryStore, tag: str, names: Sequence[str]) -> dict[str, str]:
    """Remove these buckets of container ``tag`` (unknown names are ignored); returns
    its definitions."""
    for name in names:
        _check_name(name)
    with store.memories.writing():
        table = _read(store)
        mine = {k: v for k, v in table.get(tag, {}).items() if k not in set(names)}
        if mine:
            table[tag] = mine
        else:
            table.pop(tag, None)
        _write(store, table)
    return dict(sorted(mine.items()))


def profile_buckets(store: MemoryStore, tag: str, asked: Sequence[str] | None) -> list[str] | None:
    """The buckets a profile of container ``tag`` shows: the ones ``asked`` for when
    given (each checked), else the container's defined ones, else ``None`` (every bucket
    a memory names)."""
    if asked is not None:
        return [_check_name(name) for name in asked]
    defined = defined_buckets(store, tag)
    return list(defined) if defined else None
