"""LangChain side of remy's document and memory search responses.

- :func:`documents_to_langchain` / :func:`memories_to_langchain`: a
  ``DocumentSearchResponse`` / ``MemorySearchResponse`` (our objects, or raw JSON from
  any implementation of the spec, as a dict or a string) as LangChain ``Document``s;
- :class:`RemyMemoryRetriever`: a ``BaseRetriever`` over a
  :class:`~remy_retriever.memory.MemoryStore`;
- :func:`remy_memory_tool`: a memory-search tool for agents.

Each document-search chunk becomes one ``Document`` (id ``"<documentId>::chunk-<n>"``);
each memory-search result one ``Document`` (id = the memory or chunk id). Metadata is
flat: ``kind`` (``"memory"`` or ``"chunk"``, so hybrid results can be told apart),
``score`` (0-1), ``source``, the ids (``id`` / ``document_id``), ``title``, ``type``,
``version``, ``root_memory_id``, ``context`` (parents/children with their ``relation``
and relative ``version``), ``documents``, ``is_relevant``, ``created_at`` /
``updated_at``, then the item's own metadata (see
:func:`remy_retriever.memory.memory_passages` for the full list).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Literal

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
    Callbacks,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field, StrictBool, StrictStr

from remy_retriever import InvalidInputError, Reranker
from remy_retriever.integration import Passage, document_passages, memory_passages
from remy_retriever.memory import MemorySearchResponse, MemoryStore

from .retrievers import _IGNORED_CALL_KWARGS

__all__ = [
    "DEFAULT_MEMORY_DESCRIPTION",
    "RemyMemoryRetriever",
    "documents_to_langchain",
    "format_memories",
    "memories_to_langchain",
    "remy_memory_tool",
]

DEFAULT_MEMORY_DESCRIPTION = (
    "Recall what is remembered about the user, the project or earlier conversations. "
    "Returns numbered memories (latest version, with what they replaced) and document "
    "passages, each with its source. Cite them by number."
)
NO_MEMORIES = "Nothing relevant is remembered."

#: The search options a per-call keyword may override.
_OPTIONS = (
    "k",
    "search_mode",
    "mode",
    "container_tag",
    "where",
    "threshold",
    "include",
    "rerank",
)


def _document(passage: Passage) -> Document:
    return Document(id=passage.id, page_content=passage.text, metadata=dict(passage.metadata))


def documents_to_langchain(response: object) -> list[Document]:
    """A document-search response (object, dict or JSON text) as one ``Document`` per
    chunk, in order; ``metadata["kind"] == "chunk"``."""
    return [_document(p) for p in document_passages(response)]


def memories_to_langchain(response: object) -> list[Document]:
    """A memory-search response (object, dict or JSON text) as one ``Document`` per
    result, in order; ``metadata["kind"]`` is ``"memory"`` or ``"chunk"``."""
    return [_document(p) for p in memory_passages(response)]


class RemyMemoryRetriever(BaseRetriever):
    """Search a :class:`~remy_retriever.memory.MemoryStore` from LangChain.

    Returns the memory-search results as ``Document``s (see
    :func:`memories_to_langchain`): memories, and in ``search_mode="hybrid"`` or
    ``"documents"`` document chunks of the store's linked retriever. Every field below is
    the default of each search and can be overridden for one call:
    ``retriever.invoke("tea?", k=2, container_tag="alice")``. A per-call ``where``
    replaces the default filter. ``ainvoke`` runs the (synchronous) search in a worker
    thread.

    Setup:
        ``pip install langchain-remy``; build the store with ``MemoryStore(...)`` and
        ``store.add(...)``.

    Usage:
        >>> from remy_retriever.memory import MemoryStore
        >>> from langchain_remy.memory import RemyMemoryRetriever
        >>> store = MemoryStore("./remy_data")
        >>> retriever = RemyMemoryRetriever(store, k=4, container_tag="alice")
        >>> docs = retriever.invoke("what does Alice drink?")
        >>> docs[0].metadata["kind"], docs[0].metadata["version"]
        ('memory', 2)
    """

    store: MemoryStore
    """The memory store to search."""
    k: int = Field(default=4, ge=1, le=1000)
    """Number of results."""
    search_mode: Literal["memories", "hybrid", "documents"] = "memories"
    """``"memories"``, ``"hybrid"`` (memories and document chunks) or ``"documents"``."""
    mode: Literal["semantic", "lexical", "hybrid"] = "hybrid"
    """Retrieval mode inside each collection."""
    container_tag: str | None = None
    """Only this container's memories (and documents tagged with it)."""
    where: dict[str, Any] | None = None
    """Chroma-style metadata filter on every result."""
    threshold: float = Field(default=0.0, ge=0.0, le=1.0)
    """Drop results whose 0-1 similarity is below this."""
    include: dict[str, bool] = Field(
        default_factory=lambda: {"relatedMemories": True, "documents": True}
    )
    """``relatedMemories`` adds ``context`` (parents/children), ``documents`` the
    linked documents."""
    rerank: StrictBool | StrictStr | Reranker | None = False
    """Rerank with a cross-encoder: ``True``, a model name/path or a ``Reranker``."""

    def __init__(self, store: MemoryStore | None = None, **kwargs: Any) -> None:
        if store is None:
            store = kwargs.pop("store", None)
        if not isinstance(store, MemoryStore):
            msg = (
                f"RemyMemoryRetriever needs a MemoryStore (RemyMemoryRetriever(store, k=4)), "
                f"got {type(store).__name__}"
            )
            raise InvalidInputError(msg)
        kwargs["store"] = store
        super().__init__(**kwargs)

    def search_options(self, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The options one search runs with: the fields, updated with ``overrides``."""
        options = {name: getattr(self, name) for name in _OPTIONS}
        for name, value in (overrides or {}).items():
            if name in _IGNORED_CALL_KWARGS:
                continue
            if name not in options:
                msg = (
                    f"RemyMemoryRetriever got unknown search option {name!r}; "
                    f"pass any of {list(_OPTIONS)}"
                )
                raise InvalidInputError(msg)
            options[name] = value
        return options

    def search(self, query: str, **overrides: Any) -> MemorySearchResponse:
        """Run one search and return the wire response (what ``invoke`` converts)."""
        options = self.search_options(overrides)
        return self.store.search(
            query,
            limit=options.pop("k"),
            **options,
        )

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        return memories_to_langchain(self.search(query, **kwargs))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        response = await asyncio.to_thread(self.search, query, **kwargs)
        return memories_to_langchain(response)


class MemoryQuery(BaseModel):
    """Arguments of the memory tool."""

    query: str = Field(description="what to recall, in natural language or keywords")


def format_memories(documents: list[Document]) -> str:
    """Numbered results for a prompt or tool message::

    [1] memory v2 (updated 2024-01-18T09:15:00Z; updates (-1): "Alice prefers tea")
    Alice now prefers coffee
    [2] document "Tea guide" (tea.md)
    Green tea is brewed at 80 degrees...
    """
    blocks = []
    for number, doc in enumerate(documents, start=1):
        meta = doc.metadata
        if meta.get("kind") == "memory":
            notes = [f"updated {meta.get('updated_at')}"]
            parents = (meta.get("context") or {}).get("parents") or []
            for parent in parents[:2]:
                relation, version = parent.get("relation"), parent.get("version")
                notes.append(f'{relation} ({version}): "{parent.get("memory")}"')
            head = f"[{number}] memory v{meta.get('version')} ({'; '.join(notes)})"
        else:
            title = meta.get("title") or meta.get("document_id")
            head = f'[{number}] document "{title}" ({meta.get("source")})'
        blocks.append(f"{head}\n{doc.page_content}")
    return "\n\n".join(blocks)


def remy_memory_tool(
    store: MemoryStore | RemyMemoryRetriever,
    *,
    name: str = "remy_memory",
    description: str = DEFAULT_MEMORY_DESCRIPTION,
    **options: Any,
) -> StructuredTool:
    """A tool that recalls memories (and, in hybrid mode, document passages).

    The model chooses only the ``query``: the search options (``k``, ``container_tag``,
    ``where``, ``search_mode``...) are the retriever's, or ``options`` when a plain
    ``MemoryStore`` is given, so an agent cannot widen its container. Invoked with a tool
    call it returns a ``ToolMessage`` whose content is :func:`format_memories` of the
    results and whose ``artifact`` is the memory-search response in its wire form.
    """
    if isinstance(store, MemoryStore):
        retriever = RemyMemoryRetriever(store, **options)
    elif isinstance(store, RemyMemoryRetriever):
        if options:
            retriever = RemyMemoryRetriever(store.store, **{**store.search_options(), **options})
        else:
            retriever = store
    else:
        msg = (
            f"remy_memory_tool takes a MemoryStore or a RemyMemoryRetriever, got "
            f"{type(store).__name__}"
        )
        raise InvalidInputError(msg)

    def _respond(response: MemorySearchResponse) -> tuple[str, dict[str, Any]]:
        docs = memories_to_langchain(response)
        return (format_memories(docs) if docs else NO_MEMORIES), response.to_dict()

    def recall(query: str, callbacks: Callbacks = None) -> tuple[str, dict[str, Any]]:
        return _respond(retriever.search(query))

    async def arecall(query: str, callbacks: Callbacks = None) -> tuple[str, dict[str, Any]]:
        return _respond(await asyncio.to_thread(retriever.search, query))

    return StructuredTool.from_function(
        func=recall,
        coroutine=arecall,
        name=name,
        description=description,
        args_schema=MemoryQuery,
        response_format="content_and_artifact",
    )
