"""Reading memory versions back from their collection, and the context of search results:
each result's version history (parents and children along ``updates``, within
``context_depth`` steps) and its related memories (``extends``/``derives`` links).

Every read goes through the public :class:`~remy_retriever.Retriever` API of the memory
collection: :meth:`~remy_retriever.Retriever.get_documents` for versions by id and
:meth:`~remy_retriever.Retriever.document_ids` for the versions whose bookkeeping keys
match a filter (all versions of a root; the children of some versions).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from ..retriever import Retriever
from ..schema.filters import Filter
from ..supermemory.responses import ContextMemory, MemoryContext, RelatedMemory, Relation
from .model import PARENT_KEYS, ROOT_KEY, Memory, from_stored, is_visible

__all__ = ["find_memories", "load_memories", "memory_contexts", "memory_tree"]


@dataclass
class _Related:
    """Context of one result while it is being collected: id -> (distance, relation)."""

    parents: dict[str, tuple[int, Relation]] = field(default_factory=dict)
    children: dict[str, tuple[int, Relation]] = field(default_factory=dict)
    related: dict[str, tuple[int, Relation]] = field(default_factory=dict)


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
    """The context of each result: its version history along ``updates`` within
    ``depth`` steps (``parents``: the versions it replaced, nearest first; ``children``:
    the versions that replaced it) and its ``related`` memories (one ``extends`` or
    ``derives`` link away, in either direction). Those a search with ``tag`` and
    ``tree`` may not show (forgotten ones too) are left out, but the walk goes on
    through them."""
    known: dict[str, Memory] = {m.id: m for m in results}
    if depth and results:
        known.update(memory_tree(memories, (m.root_id for m in results)))
    # Direct links first: every result's parents, and the memories naming it as a parent.
    known.update(load_memories(memories, {p for m in results for p in m.parent_ids} - set(known)))
    children_of = _children(memories, known, {m.id for m in results})
    related = {m.id: _Related() for m in results}
    for result in results:
        rel = related[result.id]
        if result.relation in ("extends", "derives"):
            for parent in result.parent_ids:
                if parent in known:
                    rel.related[parent] = (0, cast(Relation, result.relation))
        for child in sorted(children_of.get(result.id, ())):
            relation = known[child].relation
            if relation in ("extends", "derives"):
                rel.related[child] = (0, cast(Relation, relation))
    # Up the version chain: parents, grandparents... along `updates` only.
    for result in results:
        node, distance = result, 0
        while node.relation == "updates" and node.parent_ids and distance < depth:
            first = node.parent_ids[0]
            up = known.get(first) or load_memories(memories, [first]).get(first)
            if up is None:
                break
            known[up.id] = up
            distance += 1
            related[result.id].parents[up.id] = (-distance, "updates")
            node = up
    # Down the version chain: the versions that replaced the result (none for a
    # latest version), along `updates` only, each step one query on the parent keys.
    frontier = {m.id: m.id for m in results}
    for distance in range(1, depth + 1):
        ask = set(frontier.values()) - set(children_of)
        if ask:
            children_of.update(_children(memories, known, ask))
        step: dict[str, str] = {}
        for rid, node_id in frontier.items():
            for child in sorted(children_of.get(node_id, ())):
                if known[child].relation == "updates" and child != rid:
                    related[rid].children[child] = (distance, "updates")
                    step[rid] = child
                    break  # one version replaces another: a chain, not a tree
        frontier = step
        if not frontier:
            break
    out: dict[str, MemoryContext] = {}
    for rid, rel in related.items():
        out[rid] = MemoryContext(
            parents=_entries(rel.parents, known, tag, tree),
            children=_entries(rel.children, known, tag, tree),
            related=_related(rel.related, known, tag, tree),
        )
    return out


def _children(
    memories: Retriever, known: dict[str, Memory], parents: set[str]
) -> dict[str, set[str]]:
    """The ids of the versions naming each of ``parents`` as a parent (loaded into
    ``known``)."""
    out: dict[str, set[str]] = {p: set() for p in parents}
    if not parents:
        return out
    ask = sorted(parents)
    found = find_memories(memories, {"$or": [{key: {"$in": ask}} for key in PARENT_KEYS]})
    known.update(load_memories(memories, set(found) - set(known)))
    for child in found:
        if child in known:
            for parent in known[child].parent_ids:
                if parent in out:
                    out[parent].add(child)
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


def _related(
    found: Mapping[str, tuple[int, Relation]],
    known: Mapping[str, Memory],
    tag: str | None,
    tree: Filter | None,
) -> list[RelatedMemory]:
    entries = []
    for mid, (_, relation) in sorted(found.items(), key=lambda kv: known[kv[0]].updated_at):
        memory = known[mid]
        if is_visible(memory, tag, tree):
            entries.append(
                RelatedMemory(
                    memory=memory.content,
                    relation=cast(Literal["extends", "derives"], relation),
                    updated_at=memory.updated_at,
                    metadata=dict(memory.metadata),
                )
            )
    return entries
