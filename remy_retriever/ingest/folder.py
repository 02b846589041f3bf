"""Folder ingest that behaves like a sync: roots, id claims, files gone from disk, prune.

Every document read from a folder records its root (the folder, absolute with links
resolved; a file named directly records its own folder) under
:data:`~remy_retriever.schema.records.ROOT_KEY`. That lets a later ingest of the same root
find the documents it added that are no longer on disk (``gone``; removed with
``prune=True``), and refuse an id that another root, or ``add()``, already holds: ids
are paths relative to the root, so two folders' ``README.md`` would otherwise replace
each other. All checks run after every file is read and before anything is written.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..errors import InvalidDocumentError, InvalidInputError
from ..loaders import ParseLimits
from ..loaders.limits import DEFAULT_PARSE_LIMITS
from ..models.embeddings import Embedder
from ..schema.records import DOCUMENT_ID_KEY, ROOT_KEY, document_fields, document_id_of
from ..stores.sync import StoreSync
from ..util.reprs import short_repr
from .files import LoadedFiles, load_files
from .writer import Ingestor, IngestReport

__all__ = ["ingest_paths", "ingest_sources", "read_sources", "root_documents"]

#: Document ids are looked up in Chroma this many at a time (an ``$in`` filter).
_LOOKUP = 500


def ingest_paths(
    ingestor: Ingestor,
    paths: object,
    *,
    metadata: Mapping[str, Any] | None,
    id_prefix: str | None,
    prune: bool,
    strict: bool,
    max_bytes: int,
    embedder: Embedder,
    max_tokens: int,
    progress: bool,
    within: Any = None,
    parse_limits: ParseLimits | None = DEFAULT_PARSE_LIMITS,
) -> IngestReport:
    """:meth:`remy_retriever.Retriever.ingest`: read every path, then write."""
    sources = read_sources(
        paths,
        metadata=metadata,
        id_prefix=id_prefix,
        max_bytes=max_bytes,
        strict=strict,
        within=within,
        parse_limits=parse_limits,
    )
    return ingest_sources(
        ingestor,
        sources,
        prune=prune,
        embedder=embedder,
        max_tokens=max_tokens,
        batch_size=256,
        progress=progress,
        max_bytes=max_bytes,
    )


def read_sources(
    paths: object,
    *,
    metadata: Mapping[str, Any] | None,
    id_prefix: str | None,
    max_bytes: int,
    strict: bool,
    within: Any = None,
    parse_limits: ParseLimits | None = DEFAULT_PARSE_LIMITS,
) -> list[LoadedFiles]:
    """Read every path (one, or a list), each inside ``within`` when given (see
    :func:`load_files`); raise if two of them give the same id."""
    if isinstance(paths, (str, os.PathLike)):
        given: list[Any] = [paths]
    elif isinstance(paths, (list, tuple)) and paths:
        given = list(paths)
    else:
        msg = (
            "ingest() takes a folder or file path (str or pathlib.Path) or a non-empty list "
            f"of them, got {type(paths).__name__} {short_repr(paths)}"
        )
        raise InvalidInputError(msg)
    if not isinstance(strict, bool):
        msg = f"strict must be True or False, got {type(strict).__name__} {short_repr(strict)}"
        raise InvalidInputError(msg)
    if parse_limits is not None and not isinstance(parse_limits, ParseLimits):
        msg = (
            "parse_limits must be a ParseLimits (like ParseLimits(seconds=60, "
            f"memory_bytes=2**30)) or None, got {type(parse_limits).__name__} "
            f"{short_repr(parse_limits)}"
        )
        raise InvalidInputError(msg)
    sources = [
        load_files(
            p,
            metadata=metadata,
            max_bytes=max_bytes,
            id_prefix=id_prefix,
            strict=strict,
            within=within,
            parse_limits=parse_limits,
        )
        for p in given
    ]
    first: dict[str, str | None] = {}
    for source in sources:
        for doc in source.documents:
            if doc.id in first:
                msg = (
                    f"two files would both be document {doc.id!r}: {first[doc.id]!r} and "
                    f"{doc.path!r} (ids are paths relative to the folder ingested); ingest "
                    "them in separate calls with different id_prefix= values (CLI "
                    "--id-prefix), e.g. 'a/' and 'b/'; nothing was stored"
                )
                raise InvalidDocumentError(msg)
            first[doc.id] = doc.path
    return sources


def ingest_sources(
    ingestor: Ingestor, sources: Sequence[LoadedFiles], *, prune: bool, **add_options: Any
) -> IngestReport:
    """Write what :func:`read_sources` read, as one sync per root (see the module
    docstring): refuse ids other roots hold, add, then find (and with ``prune``
    delete) this root's documents that are gone from disk."""
    if not isinstance(prune, bool):
        msg = f"prune must be True or False, got {type(prune).__name__} {short_repr(prune)}"
        raise InvalidInputError(msg)
    sync = ingestor.sync
    adopted: set[str] = set()
    gone: list[str] = []
    for source in sources:
        adopted |= _check_claims(sync, source)
        if source.folder:
            held = root_documents(sync, source.root)
            gone += sorted(d for d in held if not source.on_disk(d))
    roots = {doc.id: source.root for source in sources for doc in source.documents}
    report = ingestor.add(
        [doc for source in sources for doc in source.documents],
        roots=roots,
        rewrite=frozenset(adopted),
        **add_options,
    )
    on_disk = _files_still_there(sync, gone)  # read before a prune deletes the records
    deleted = ingestor.delete(gone) if prune and gone else 0
    return replace(
        report,
        skipped=tuple(i for s in sources for i in s.skipped),
        failed=tuple(i for s in sources for i in s.failed),
        gone=tuple(gone),
        pruned=prune and bool(gone),
        gone_on_disk=on_disk,
        chunks_deleted=report.chunks_deleted + deleted,
    )


def _files_still_there(sync: StoreSync, gone: Sequence[str]) -> tuple[str, ...]:
    """The ids among ``gone`` whose recorded file is still a file where it was."""
    stored = sync.table.stored(list(gone)) if gone else {}
    return tuple(
        doc_id
        for doc_id in gone
        if doc_id in stored
        and (path := stored[doc_id].document.path) is not None
        and os.path.isfile(path)
    )


def root_documents(sync: StoreSync, root: str) -> set[str]:
    """The ids of the documents ingested from ``root`` (chunk ids only are read)."""
    return _document_ids(sync, {ROOT_KEY: root})


def _document_ids(sync: StoreSync, where: Mapping[str, Any]) -> set[str]:
    out: set[str] = set()
    for page in sync.dense.iter_all(where=where, documents=False, metadatas=False):
        out.update(document_id_of(cid) for cid, _, _ in page)
    return out


def _check_claims(sync: StoreSync, source: LoadedFiles) -> set[str]:
    """Refuse an id of ``source`` that is stored from another root or by ``add()``;
    return the ids to adopt: stored without a root (before roots were recorded) from
    the very same path."""
    ids = [doc.id for doc in source.documents]
    if not ids:
        return set()
    stored: set[str] = set()
    mine: set[str] = set()
    for lo in range(0, len(ids), _LOOKUP):
        part = ids[lo : lo + _LOOKUP]
        by_id: dict[str, Any] = {DOCUMENT_ID_KEY: {"$in": part}}
        stored |= _document_ids(sync, by_id)
        mine |= _document_ids(sync, {"$and": [by_id, {ROOT_KEY: source.root}]})
    others = sorted(stored - mine)
    if not others:
        return set()
    rows = sync.table.get(others)
    paths = {doc.id: doc.path for doc in source.documents}
    adopted: set[str] = set()
    for doc_id in others:
        meta = rows.get(doc_id, ("", {}))[1]
        old_root = meta.get(ROOT_KEY)
        old_path = document_fields(meta)["path"]
        if old_root is None and old_path is not None and old_path == paths[doc_id]:
            adopted.add(doc_id)
            continue
        held = (
            f"ingested from {old_path!r} (folder {old_root!r})"
            if old_root is not None
            else f"added with add() (path {old_path!r})"
            if old_path is not None
            else "added with add()"
        )
        msg = (
            f"document id {doc_id!r} from {paths[doc_id]!r} is already stored, {held}; it "
            "is not replaced. Give this folder its own ids with id_prefix= (CLI "
            "--id-prefix, e.g. 'docs/'), or delete the stored document first "
            f"(Retriever.delete([{doc_id!r}])) if it moved here; nothing was stored"
        )
        raise InvalidDocumentError(msg)
    return adopted
