"""Deliberate damage to Chroma's persisted HNSW graph, for the reachability tests.

An embedded store keeps each collection's vector index in a segment directory holding
hnswlib's files: ``header.bin`` (the index's sizes and entry point, after a 4-byte
version), ``data_level0.bin`` (per element: its level-0 link list, its vector, its
label), ``link_lists.bin`` (per element: a byte count, then its links on the upper
levels) and ``index_metadata.pickle`` (chunk id -> label). A link list is a 4-byte head,
whose low 16 bits count the links, then the neighbours' element numbers (uint32).

:func:`cut_incoming_links` removes every link that points to one chunk's element, at
every level. The chunk keeps its record and its vector (reading it works), but no search
can reach it any more: the state a writer killed while Chroma persisted its index can
leave. Only call it while no process has the store open; Chroma loads the files on the
next open.
"""

from __future__ import annotations

import pickle
import struct
from pathlib import Path

_HEADER = struct.Struct("<iQQQQQQ")  # version, offsetLevel0, max, count, size, label, data
_ENTRY = struct.Struct("<iI")  # maxlevel, entry point (at byte 52)
_M = struct.Struct("<QQ")  # maxM, maxM0 (at byte 60)


def segment_of(store: Path, chunk_id: str) -> tuple[Path, int]:
    """The segment directory holding ``chunk_id``'s persisted vector, and its label."""
    for meta in sorted(store.glob("*/index_metadata.pickle")):
        # Test-only: reads the pickle Chroma itself wrote in a store this test made.
        mapping = pickle.loads(meta.read_bytes())
        label = mapping.get("id_to_label", {}).get(chunk_id)
        if label is not None:
            return meta.parent, int(label)
    msg = f"{chunk_id!r} is in no persisted HNSW segment of {store}"
    raise LookupError(msg)


def cut_incoming_links(store: Path, chunk_id: str) -> int:
    """Remove every link to ``chunk_id``'s element from the persisted graph; returns the
    links removed (the element's own outgoing links stay)."""
    segment, label = segment_of(store, chunk_id)
    header = (segment / "header.bin").read_bytes()
    _, level0_at, _, count, size, label_at, _ = _HEADER.unpack_from(header, 0)
    _, entry = _ENTRY.unpack_from(header, 52)
    max_m, _ = _M.unpack_from(header, 60)
    level0 = bytearray((segment / "data_level0.bin").read_bytes())
    target = next(
        i for i in range(count) if struct.unpack_from("<Q", level0, i * size + label_at)[0] == label
    )
    if target == entry:
        msg = f"{chunk_id!r} is the graph's entry point; pick another chunk"
        raise ValueError(msg)
    removed = 0

    def drop_target(buffer: bytearray, at: int) -> None:
        nonlocal removed
        n = struct.unpack_from("<H", buffer, at)[0]
        links = list(struct.unpack_from(f"<{n}I", buffer, at + 4))
        kept = [link for link in links if link != target]
        if len(kept) < len(links):
            removed += len(links) - len(kept)
            struct.pack_into("<H", buffer, at, len(kept))
            struct.pack_into(f"<{len(kept)}I", buffer, at + 4, *kept)

    for element in range(count):
        if element != target:
            drop_target(level0, element * size + level0_at)
    upper = bytearray((segment / "link_lists.bin").read_bytes())
    block = max_m * 4 + 4
    at = 0
    for element in range(count):
        length = struct.unpack_from("<I", upper, at)[0]
        at += 4
        if element != target:
            for level in range(length // block):
                drop_target(upper, at + level * block)
        at += length
    assert at == len(upper), f"link_lists.bin: read {at} of {len(upper)} bytes"
    (segment / "data_level0.bin").write_bytes(bytes(level0))
    (segment / "link_lists.bin").write_bytes(bytes(upper))
    return removed
