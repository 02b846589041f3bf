"""Framework metadata as remy metadata and back: one encoding for both adapters.

remy (and its ``where`` filters) stores flat ``str``, ``int``, ``float`` and ``bool``
values; LangChain Documents and LlamaIndex nodes carry any JSON-like mapping. A
:class:`MetadataCodec` maps one onto the other so that what goes in comes out, or refuses
the value with :class:`~remy_retriever.InvalidDocumentError` naming the key:

- **Stored keys.** A key path becomes one stored key: its parts joined by ``.``, each
  part escaped the JSON-pointer way (``~`` -> ``~0``, ``.`` -> ``~1``). So
  ``{"a": {"b": 2}}`` is stored under ``a.b`` (``where={"a.b": 2}`` filters on it) and
  the literal key ``"a.b"`` under ``a~1b``: the two never collide.
- **Reserved-looking keys.** A stored key that starts with ``remy_``, ``$``, ``#``,
  ``lc_``, ``lc.`` or ``li_``, or is ``ref_doc_id``, ``chroma:document`` or empty, gets
  a ``~`` in front (``remy_x`` -> ``~remy_x``). Those names belong to remy, Chroma and
  the adapters, so nothing in user metadata can change what the adapters read, filter
  or delete by.
- **Values.** ``str``, ``bool``, finite ``float`` and ``int`` in 64 bits are stored as
  they are, and so is a list (or tuple) of strings that remy can store as a list (1 to
  256 items), so ``$contains`` filters on its items. Any other list, a tuple or an empty
  dict is stored as its JSON text. A tuple comes back as a list either way. ``None`` is
  not stored (Chroma has no null) but recorded. Any other object (a ``datetime``, a
  ``Path``) is stored as its ``str()`` and comes back as that string.
- **Refused.** NaN and infinities, ints beyond 64 bits (anywhere, lists included),
  keys that are not ``str``, and lists holding anything JSON cannot hold raise
  :class:`~remy_retriever.InvalidDocumentError` naming the key; nothing is written.
- **The record.** Every stored key whose name or value differs from the user's is
  listed, with its key path and kind, in one JSON key (the codec's ``record_key``,
  e.g. ``lc_encoding``), which :meth:`MetadataCodec.decode` reads. Keys without a record
  (metadata written by remy itself) pass through as they are.
"""

from __future__ import annotations

import contextlib
import json
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidDocumentError
from ..schema.document import MetadataValue, list_value_error, metadata_limit_error
from ..schema.records import INT64_MAX, INT64_MIN, RESERVED_PREFIX
from ..util.reprs import short_repr

__all__ = ["RESERVED_LOOKING", "MetadataCodec", "escape_key", "reserved_looking"]

#: Stored-key prefixes (and whole names) that belong to remy, Chroma or the adapters.
RESERVED_LOOKING = (RESERVED_PREFIX, "$", "#", "lc_", "lc.", "li_")
_RESERVED_NAMES = frozenset({"ref_doc_id", "chroma:document", ""})
_MARK = "~"


def reserved_looking(key: str) -> bool:
    """Whether a stored key is one of the names user metadata may not take."""
    return key in _RESERVED_NAMES or key.startswith(RESERVED_LOOKING)


def escape_key(path: Sequence[str]) -> str:
    """The stored key of a key path (see the module docstring)."""
    key = ".".join(part.replace("~", "~0").replace(".", "~1") for part in path)
    return _MARK + key if reserved_looking(key) else key


def _where(path: Sequence[str]) -> str:
    return "metadata" + "".join(f"[{short_repr(part, 60)}]" for part in path)


def _number(path: Sequence[str], value: Any) -> Any:
    """``value`` if it is a number remy can store exactly; else InvalidDocumentError."""
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral):
        value = int(value)
        if not INT64_MIN <= value <= INT64_MAX:
            msg = (
                f"{_where(path)} = {short_repr(value)} does not fit in 64 bits (-2**63 to "
                "2**63 - 1), so it cannot be stored exactly; store it as a str"
            )
            raise InvalidDocumentError(msg)
        return value
    value = float(value)
    if not math.isfinite(value):
        msg = (
            f"{_where(path)} = {value!r} is not a finite number and cannot be stored; use "
            "None for a missing value (e.g. df.where(df.notna(), None)) or drop the key"
        )
        raise InvalidDocumentError(msg)
    return value


def _storable_list(value: Sequence[Any]) -> bool:
    """Whether remy stores ``value`` as a list value (strings within the limits)."""
    if list_value_error(value) is not None:
        return False
    return metadata_limit_error({"list": list(value)}) is None


def _json_ready(path: Sequence[str], value: Any) -> Any:
    """``value`` (inside a list) as plain JSON, or InvalidDocumentError naming the key."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (bool, numbers.Real)):
        return _number(path, value)
    if isinstance(value, (list, tuple)):
        return [_json_ready(path, item) for item in value]
    if isinstance(value, Mapping):
        out = {}
        for key, inner in value.items():
            if not isinstance(key, str):
                msg = (
                    f"{_where(path)} holds a dict with the key {short_repr(key)}, which is not "
                    "a str; JSON keys are strings, so it cannot come back as given"
                )
                raise InvalidDocumentError(msg)
            out[key] = _json_ready(path, inner)
        return out
    msg = (
        f"{_where(path)} holds {type(value).__name__} {short_repr(value)} in a list; lists "
        "are stored as JSON, so they may hold only str, numbers, bools, None, lists and dicts"
    )
    raise InvalidDocumentError(msg)


@dataclass(frozen=True)
class MetadataCodec:
    """The encoding of the module docstring, recorded under ``record_key``."""

    record_key: str

    def encode(self, metadata: Mapping[Any, Any]) -> dict[str, MetadataValue]:
        """``metadata`` as flat remy metadata (the record included when needed)."""
        if not isinstance(metadata, Mapping):
            msg = f"metadata must be a mapping, got {type(metadata).__name__}"
            raise InvalidDocumentError(msg)
        out: dict[str, MetadataValue] = {}
        record: dict[str, Any] = {}
        nulls: list[list[str]] = []

        def put(path: list[str], value: Any) -> None:
            if isinstance(value, Mapping) and value:
                for sub, inner in value.items():
                    put([*path, _key(path, sub)], inner)
                return
            if value is None:
                nulls.append(path)
                return
            key = escape_key(path)
            kind = "value"
            stored: MetadataValue
            if isinstance(value, str):
                stored = value
            elif isinstance(value, (bool, numbers.Real)):
                stored = _number(path, value)
            elif isinstance(value, (list, tuple)) and _storable_list(value):
                stored = list(value)
            elif isinstance(value, (list, tuple, Mapping)):
                plain = _json_ready(path, value)
                stored, kind = json.dumps(plain, ensure_ascii=False, allow_nan=False), "json"
            else:
                stored, kind = str(value), "str"
            out[key] = stored
            if kind != "value" or len(path) != 1 or key != path[0]:
                record[key] = {"path": path, "kind": kind}

        for name, value in metadata.items():
            put([_key([], name)], value)
        if nulls:
            record[""] = {"nulls": nulls}
        if record:
            out[self.record_key] = json.dumps(record, sort_keys=True, ensure_ascii=False)
        return out

    def decode(self, stored: Mapping[str, Any]) -> dict[str, Any]:
        """The metadata :meth:`encode` was given. Reserved-looking keys without a record
        (an adapter's own keys) are left out; other keys pass through."""
        try:
            raw = stored.get(self.record_key)
            record = json.loads(raw) if isinstance(raw, str) else {}
        except ValueError:
            record = {}
        if not isinstance(record, dict):
            record = {}
        out: dict[str, Any] = {}
        for key, value in stored.items():
            entry = record.get(key) if key else None
            if key == self.record_key:
                continue
            if not isinstance(entry, dict):
                if not reserved_looking(key):
                    out[key] = value
                continue
            if entry.get("kind") == "json" and isinstance(value, str):
                with contextlib.suppress(ValueError):  # else not ours: the text as stored
                    value = json.loads(value)
            _assign(out, [str(p) for p in entry.get("path") or [key]], value)
        nulls = record.get("")
        for path in nulls.get("nulls", []) if isinstance(nulls, dict) else []:
            if isinstance(path, list) and path:
                _assign(out, [str(p) for p in path], None)
        return out


def _key(path: Sequence[str], key: object) -> str:
    if not isinstance(key, str):
        msg = (
            f"{_where(path)} has the key {short_repr(key)}, which is not a str; metadata "
            "keys must be strings (e.g. str(key))"
        )
        raise InvalidDocumentError(msg)
    return key


def _assign(out: dict[str, Any], path: list[str], value: Any) -> None:
    node = out
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[path[-1]] = value
