"""Reading memory versions back from their collection, and the related-memory context of
search results: each result's parents and children within ``context_depth`` steps.

Every read goes through the public :class:`~remy_retriever.Retriever` API of the memory
collection: :meth:`~remy_retriever.Retriever.get_documents` for versions by id and
:meth:`~remy_retriever.Retriever.document_ids` for the versions whose bookkeeping keys
match a filter (all versions of a root; the children of some versions).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from ..filters import Filter
from ..responses import ContextMemory, MemoryContext, Relation
from ..retriever import Retriever
from .model import PARENT_KEYS, ROOT_KEY, Memory, from_stored, is_visible

__all__ = ["find_memories", "load_memories", "memory_contexts", "memory_tree"]


@dataclass
class _Related:
    """Context of one result while it is being collected: id -> (distance, relation)."""

    parents: dict[str, tuple[int, Relation]] = field(default_factory=dict)
    children: dict[str, tuple[int, Relation]] = field(default_factory=dict)


def load_memories(memories: Retriever, ids: Iterable[str]) -> dict[str, Memory]:
    """The memory versions with these ids, by id; unknown ids are left out."""
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    out: dict[str, Memory] = {}
    for doc_id, stored in memories.get_documents(wanted).items():
        memory = from_stored(stored)
        if memory is not None:
            out[doc_id] = memory
    return out


def find_memories(memories: Retriever, where: Mapping[str, Any]) -> list[str]:
    """Ids of the memory versions whose metadata matches ``where`` (a Chroma filter)."""
    return memories.document_ids(where)


def memory_tree(memories: Retriever, roots: Iterable[str]) -> dict[str, Memory]:
    """Every version of the memories with these root ids."""
    wanted = sorted(set(roots))
    if not wanted:
        return {}
    return load_memories(memories, find_memories(memories, {ROOT_KEY: {"$in": wanted}}))


def memory_contexts(
    memories: Retriever,
    results: Sequence[Memory],
    depth: int,
    tag: str | None,
    tree: Filter | None,
) -> dict[str, MemoryContext]:
    """Parents and children of each result, nearest first, within ``depth`` steps;
    those a search with ``tag`` and ``tree`` may not show (forgotten ones too) are left
    out, but the walk goes on through them."""
    known: dict[str, Memory] = {m.id: m for m in results}
    if depth and results:
        known.update(memory_tree(memories, (m.root_id for m in results)))
    related = {m.id: _Related() for m in results}
    # Up: parents, grandparents... (each step one batched read of unknown ids).
    frontier = {m.id: {m.id} for m in results}
    for distance in range(1, depth + 1):
        parents = {p for ids in frontier.values() for n in ids for p in known[n].parent_ids}
        known.update(load_memories(memories, parents - set(known)))
        for rid, ids in frontier.items():
            step: set[str] = set()
            for node in ids:
                relation = known[node].relation
                for parent in known[node].parent_ids:
                    if parent in known and parent != rid and parent not in related[rid].parents:
                        related[rid].parents[parent] = (-distance, cast(Relation, relation))
                        step.add(parent)
            frontier[rid] = step
        if not any(frontier.values()):
            break
    # Down: children, grandchildren... (each step one query on the parent keys).
    frontier = {m.id: {m.id} for m in results}
    children_of: dict[str, set[str]] = {}
    asked: set[str] = set()
    for distance in range(1, depth + 1):
        ask = sorted({n for ids in frontier.values() for n in ids} - asked)
        if ask:
            asked.update(ask)
            query = {"$or": [{key: {"$in": ask}} for key in PARENT_KEYS]}
            found = find_memories(memories, query)
            known.update(load_memories(memories, set(found) - set(known)))
            for child in found:
                if child in known:
                    for parent in known[child].parent_ids:
                        children_of.setdefault(parent, set()).add(child)
        for rid, ids in frontier.items():
            step = set()
            for node in ids:
                for child in sorted(children_of.get(node, ())):
                    if child != rid and child not in related[rid].children:
                        relation = cast(Relation, known[child].relation)
                        related[rid].children[child] = (distance, relation)
                        step.add(child)
            frontier[rid] = step
        if not any(frontier.values()):
            break
    out: dict[str, MemoryContext] = {}
    for rid, rel in related.items():
        out[rid] = MemoryContext(
            parents=_entries(rel.parents, known, tag, tree),
            children=_entries(rel.children, known, tag, tree),
        )
    return out


def _entries(
    found: Mapping[str, tuple[int, Relation]],
    known: Mapping[str, Memory],
    tag: str | None,
    tree: Filter | None,
) -> list[ContextMemory]:
    entries = []
    order = sorted(found.items(), key=lambda kv: (abs(kv[1][0]), known[kv[0]].updated_at))
    for mid, (distance, relation) in order:
        memory = known[mid]
        if not is_visible(memory, tag, tree):
            continue
        entries.append(
            ContextMemory(
                memory=memory.content,
                relation=relation,
                version=distance,
                updated_at=memory.updated_at,
                metadata=dict(memory.metadata),
            )
        )
    return entries
