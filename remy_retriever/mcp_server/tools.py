"""What each MCP tool does, and the guards around them. No ``mcp`` import here: the server
(:mod:`.server`) translates between the protocol and :class:`RemyTools`.

Guards (:class:`Guards`, from ``remy mcp``'s flags):

- ``read_only``: only the search tools exist (``search``, ``search_documents``,
  ``search_memories``); the others are neither listed nor callable.
- ``container_tag``: every memory and search call runs in this one container. The tools'
  ``container_tag``/``container_tags`` arguments disappear from their schemas; a call
  that passes another tag anyway is refused, and memories of other containers can be
  neither updated nor forgotten. Document searches filter on the documents'
  ``container_tag`` metadata (ANDed with the caller's filter, so no filter can widen
  it, and the values a ``filters`` tree is resolved against are read inside it), and
  ``add_documents`` stamps that tag on what it adds. What it adds follows the engine's
  memory rule (:class:`remy_retriever.memory.LinkedDocuments`, as over ``remy serve``):
  a short file in the pinned container is also a memory there, linked to the document.
- ``allowed_roots``: ``add_documents`` exists only with at least one, and reads only
  paths whose real path (``..`` and links resolved) is inside one
  (:func:`remy_retriever.util.paths.resolve_inside`). The ingest checks it again on
  what it opens (``within=``: opened from the allowed folder name by name, never
  through a link), so a link swapped in after this check leads nowhere; inside a
  folder, links leaving it are skipped by the ingest itself.

Every failure is a :class:`~remy_retriever.errors.RemyError` whose message names the
argument and the fix; the server turns it into a tool error result.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import InvalidInputError
from ..memory import LinkedDocuments, MemoryStore, tag_of
from ..memory.model import Memory
from ..retriever import Retriever
from ..schema.document import CONTAINER_TAG_KEY
from ..schema.filters import and_where, scope_where
from ..supermemory.filters import where_from_filters
from ..supermemory.responses import DocumentSearchResponse, MemorySearchResponse
from ..util.paths import resolve_inside
from ..util.reprs import short_repr
from .formatting import format_documents, format_hits, format_memories
from .schemas import (
    AddDocumentsArgs,
    AddMemoryArgs,
    ForgetMemoryArgs,
    ForgetOutput,
    IngestOutput,
    MemoryOutput,
    SearchArgs,
    SearchDocumentsArgs,
    SearchMemoriesArgs,
    SearchOutput,
    UpdateMemoryArgs,
)

__all__ = ["Guards", "RemyTools", "ToolResult", "ToolSpec"]

logger = logging.getLogger("remy.mcp")

#: Most documents ``resources/list`` names (a client reads any other by its URI).
MAX_LISTED_DOCUMENTS = 200


@dataclass(frozen=True)
class Guards:
    """What ``remy mcp`` lets the tools do (see the module docstring)."""

    read_only: bool = False
    container_tag: str | None = None
    allowed_roots: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, a description for models, its argument and output models,
    and its behaviour hints (MCP tool annotations)."""

    name: str
    title: str
    description: str
    args: type[BaseModel]
    output: type[BaseModel] | None
    read_only: bool
    destructive: bool = False
    idempotent: bool = False


@dataclass(frozen=True)
class ToolResult:
    """A tool's answer: text for the model, the structured form (``structuredContent``)
    and the ids of the documents it cites (offered as ``remy://documents/{id}`` links)."""

    text: str
    structured: dict[str, Any]
    document_ids: tuple[str, ...] = ()


SPECS = (
    ToolSpec(
        "search",
        "Search the knowledge base",
        "Search the documents for passages relevant to a question. Returns up to k (1-50, "
        "default 5) numbered passages, each with its citation (title > section (source, "
        "page)); cite them by number. Hybrid keyword + meaning search by default. "
        "structuredContent.hits holds the same hits as JSON (SearchHit).",
        SearchArgs,
        SearchOutput,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        "search_documents",
        "Search documents (grouped)",
        "Search the documents and return the best whole documents (up to limit, 1-50), "
        "each with its matching chunks and 0-1 scores, in supermemory's /v3/search shape. "
        "Use it to find which documents are relevant; use search for citable passages.",
        SearchDocumentsArgs,
        DocumentSearchResponse,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        "search_memories",
        "Search memories",
        "Search remembered facts (and, with search_mode 'hybrid' or 'documents', document "
        "passages). Returns up to limit (1-50) results with 0-1 similarity, only the "
        "latest version of each memory.",
        SearchMemoriesArgs,
        MemorySearchResponse,
        read_only=True,
        idempotent=True,
    ),
    ToolSpec(
        "add_memory",
        "Remember a fact",
        "Store a new memory: a fact about the user, project or conversation worth "
        "recalling later (at most 100,000 characters). Returns the memory with its id; "
        "to correct it later use update_memory, not a second add_memory.",
        AddMemoryArgs,
        MemoryOutput,
        read_only=False,
    ),
    ToolSpec(
        "update_memory",
        "Correct a memory",
        "Replace a memory's content with a corrected version. The old version is kept in "
        "its history and no longer found by search. Takes the id of the latest version.",
        UpdateMemoryArgs,
        MemoryOutput,
        read_only=False,
    ),
    ToolSpec(
        "forget_memory",
        "Forget a memory",
        "Forget a memory, by id or by its exact content: search no longer finds it. Pass "
        "exactly one of id and content, and optionally a reason.",
        ForgetMemoryArgs,
        ForgetOutput,
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
    ToolSpec(
        "add_documents",
        "Add files to the knowledge base",
        "Read a file or a folder (recursively: .md .txt .rst, and .pdf .html .docx when "
        "installed) and add it to the searchable documents; unchanged files are skipped. "
        "Only paths inside the folders this server was allowed to read are accepted.",
        AddDocumentsArgs,
        IngestOutput,
        read_only=False,
        idempotent=True,
    ),
)


class RemyTools:
    """The tools over one document :class:`Retriever` and one :class:`MemoryStore`
    (``None`` when a read-only server found no memory collection), under :class:`Guards`."""

    def __init__(
        self, documents: Retriever, memories: MemoryStore | None, *, guards: Guards
    ) -> None:
        self.documents = documents
        self.memories = memories
        self.guards = guards
        # The memory rule for add_documents: with memories linked to these documents
        # that scope them by the container-tag key (what `remy mcp` opens).
        self._linked = (
            LinkedDocuments(memories)
            if memories is not None
            and memories.retriever is documents
            and memories.document_container_key == CONTAINER_TAG_KEY
            else None
        )
        self._run: dict[str, Callable[[Any], ToolResult]] = {
            "search": self._search,
            "search_documents": self._search_documents,
            "search_memories": self._search_memories,
            "add_memory": self._add_memory,
            "update_memory": self._update_memory,
            "forget_memory": self._forget_memory,
            "add_documents": self._add_documents,
        }

    # -- listing --------------------------------------------------------------------------

    def specs(self) -> list[ToolSpec]:
        """The tools this server offers under its guards."""
        return [s for s in SPECS if self._offered(s)]

    def _offered(self, spec: ToolSpec) -> bool:
        if self.guards.read_only and not spec.read_only:
            return False
        return spec.name != "add_documents" or bool(self.guards.allowed_roots)

    def input_schema(self, spec: ToolSpec) -> dict[str, Any]:
        """The JSON Schema of the tool's arguments (without the container-tag arguments
        when the server pins a tag)."""
        schema = spec.args.model_json_schema()
        if self.guards.container_tag is not None:
            for name in ("container_tag", "container_tags"):
                schema.get("properties", {}).pop(name, None)
        return schema

    @staticmethod
    def output_schema(spec: ToolSpec) -> dict[str, Any] | None:
        if spec.output is None:
            return None
        return spec.output.model_json_schema(by_alias=True, mode="serialization")

    # -- calling --------------------------------------------------------------------------

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> ToolResult:
        """Run tool ``name``; raises :class:`InvalidInputError` (a ``RemyError``) for an
        unknown tool or bad arguments, and whatever ``RemyError`` the engine raises."""
        spec = next((s for s in SPECS if s.name == name), None)
        if spec is None or not self._offered(spec):
            offered = ", ".join(s.name for s in self.specs())
            why = ""
            if spec is not None and self.guards.read_only:
                why = " (this server is read-only)"
            elif spec is not None:
                why = " (the server was started without --allow-path)"
            msg = f"no tool {name!r}{why}; this server offers: {offered}"
            raise InvalidInputError(msg)
        args = self._parse(spec, dict(arguments or {}))
        return self._run[name](args)

    def _parse(self, spec: ToolSpec, arguments: dict[str, Any]) -> BaseModel:
        pin = self.guards.container_tag
        if pin is not None:
            for key, same in (("container_tag", pin), ("container_tags", [pin])):
                if key in arguments:
                    given = arguments.pop(key)
                    if given is not None and given != same:
                        msg = (
                            f"{spec.name}: this server is pinned to container tag {pin!r}, so "
                            f"{key}={short_repr(given)} is not allowed; leave {key} out "
                            f"(every call uses {pin!r})"
                        )
                        raise InvalidInputError(msg)
        try:
            return spec.args.model_validate(arguments)
        except ValidationError as exc:
            takes = list(self.input_schema(spec).get("properties", {}))
            raise InvalidInputError(_argument_errors(spec.name, exc, takes)) from None

    def _tag(self, given: str | None) -> str | None:
        return self.guards.container_tag if self.guards.container_tag is not None else given

    def _scope(self, tags: list[str] | None = None) -> dict[str, Any] | None:
        """The documents this call may read: the pinned tag, else ``tags`` (``None``:
        every document)."""
        pin = self.guards.container_tag
        return scope_where([pin] if pin is not None else tags, key=CONTAINER_TAG_KEY)

    def _store(self) -> MemoryStore:
        if self.memories is None:
            msg = (
                "this store has no memories yet and the server is read-only; use search or "
                "search_documents for documents"
            )
            raise InvalidInputError(msg)
        return self.memories

    # -- the tools ------------------------------------------------------------------------

    def _search(self, args: SearchArgs) -> ToolResult:
        hits = self.documents.search(
            args.query,
            k=args.k,
            mode=args.mode,
            where=and_where(args.where, self._scope()),
            rerank=args.rerank,
        )
        ids = tuple(dict.fromkeys(h.citation.document_id for h in hits))
        return ToolResult(format_hits(hits), {"hits": [h.to_dict() for h in hits]}, ids)

    def _search_documents(self, args: SearchDocumentsArgs) -> ToolResult:
        scope = self._scope(args.container_tags or None)
        tree = where_from_filters(
            args.filters, values=lambda keys: self.documents.scan_metadata_values(keys, where=scope)
        )
        where = and_where(tree, scope)
        response = self.documents.search_documents(args.query, limit=args.limit, where=where)
        ids = tuple(r.document_id for r in response.results)
        return ToolResult(format_documents(response), response.to_dict(), ids)

    def _search_memories(self, args: SearchMemoriesArgs) -> ToolResult:
        response = self._store().search(
            args.query,
            search_mode=args.search_mode,
            limit=args.limit,
            include=set(args.include),
            container_tag=self._tag(args.container_tag),
        )
        return ToolResult(format_memories(response), response.to_dict())

    def _add_memory(self, args: AddMemoryArgs) -> ToolResult:
        memory = self._store().add(
            args.content, metadata=args.metadata, container_tag=self._tag(args.container_tag)
        )
        return ToolResult(_memory_line("Remembered", memory), memory.to_dict())

    def _update_memory(self, args: UpdateMemoryArgs) -> ToolResult:
        store = self._store()
        store.get(args.id, container_tags=self._pinned())
        memory = store.update(args.id, args.new_content)
        return ToolResult(_memory_line(f"Updated {args.id} ->", memory), memory.to_dict())

    def _forget_memory(self, args: ForgetMemoryArgs) -> ToolResult:
        store = self._store()
        if args.id is not None:
            target = store.get(args.id, container_tags=self._pinned())
        else:
            target = store.find_by_content(
                str(args.content), container_tag=self.guards.container_tag
            )
        memory = store.forget(target.id)
        logger.info("forgot memory %s (reason: %r)", memory.id, args.reason)
        text = _memory_line("Forgot", memory) + (f" Reason: {args.reason}" if args.reason else "")
        return ToolResult(text, {"memory": memory.to_dict(), "reason": args.reason})

    def _add_documents(self, args: AddDocumentsArgs) -> ToolResult:
        roots = self.guards.allowed_roots
        real = resolve_inside(args.path, roots, base=roots[0])
        pin = self.guards.container_tag
        if self._linked is not None:
            report = self._linked.ingest(real, tag=pin, progress=False, within=roots)
        else:
            metadata = None if pin is None else {CONTAINER_TAG_KEY: pin}
            report = self.documents.ingest(real, metadata=metadata, progress=False, within=roots)
        structured = {
            "added": list(report.added),
            "updated": list(report.updated),
            "unchanged": list(report.unchanged),
            "chunksWritten": report.chunks_written,
            "skipped": [{"path": i.path, "reason": i.reason} for i in report.skipped],
            "failed": [{"path": i.path, "reason": i.reason} for i in report.failed],
        }
        text = (
            f"Read {real}: added {len(report.added)}, updated {len(report.updated)}, "
            f"unchanged {len(report.unchanged)} documents ({report.chunks_written} chunks "
            f"written); skipped {len(report.skipped)}, failed {len(report.failed)} files."
        )
        for issue in (*report.skipped, *report.failed)[:20]:
            text += f"\n- {issue.path}: {issue.reason}"
        return ToolResult(text, structured, tuple(report.added + report.updated))

    # -- memories of the pinned container only ---------------------------------------------

    def _pinned(self) -> list[str] | None:
        """The containers whose memories may be named by id (``None``: every one); a
        memory elsewhere is reported exactly as an unknown id."""
        pin = self.guards.container_tag
        return None if pin is None else [pin]

    # -- documents as resources -----------------------------------------------------------

    def list_documents(self) -> list[tuple[str, str | None]]:
        """``(id, title)`` of up to :data:`MAX_LISTED_DOCUMENTS` documents (the pinned
        container's only)."""
        pin = self.guards.container_tag
        ids: list[str] = []
        # The document table (one record per document), read a page at a time and left
        # as soon as enough are found: a client lists resources on connect, and the
        # chunks of a large collection would take long to go through.
        for page in self.documents.iter_document_metadata(page=1000):
            ids += [d for d, meta in page if pin is None or meta.get(CONTAINER_TAG_KEY) == pin]
            if len(ids) >= MAX_LISTED_DOCUMENTS:
                break
        ids = sorted(ids[:MAX_LISTED_DOCUMENTS])
        stored = self.documents.get_documents(ids)
        return [(i, stored[i].document.title if i in stored else None) for i in ids]

    def read_document(self, document_id: str) -> tuple[str, dict[str, Any]]:
        """A document's full text and its citation (id, title, source, type, timestamps,
        metadata). An unknown id, or a document outside the pinned container, raises
        :class:`InvalidInputError`."""
        stored = self.documents.get_documents([document_id]).get(document_id)
        pin = self.guards.container_tag
        if stored is None or (pin is not None and tag_of(stored.document) != pin):
            where = f" in container {pin!r}" if pin else ""
            msg = (
                f"no document {document_id!r}{where}; the documentId of a search hit's "
                "citation names one"
            )
            raise InvalidInputError(msg)
        doc = stored.document
        citation = {
            "documentId": doc.id,
            "title": doc.title,
            "url": doc.url,
            "path": doc.path,
            "source": doc.url or doc.path or doc.id,
            "type": doc.type,
            "chunkCount": stored.chunk_count,
            "createdAt": stored.created_at,
            "updatedAt": stored.updated_at,
            "metadata": dict(doc.metadata),
        }
        return doc.text, citation


def _memory_line(verb: str, memory: Memory) -> str:
    tag = f" in container {memory.container_tag!r}" if memory.container_tag else ""
    return f"{verb} memory {memory.id} (version {memory.version}){tag}: {memory.content}"


def _argument_errors(tool: str, exc: ValidationError, takes: list[str]) -> str:
    """One line per bad argument: its name, what is wrong, and the value given."""
    lines = []
    for err in exc.errors(include_url=False)[:10]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        if err["type"] == "extra_forbidden":
            lines.append(f"{where}: no such argument ({tool} takes {', '.join(takes)})")
            continue
        given = "" if err["type"] == "missing" else f" (got {short_repr(err.get('input'))})"
        lines.append(f"{where}: {err['msg']}{given}")
    return f"{tool}: bad arguments: {'; '.join(lines)}"
