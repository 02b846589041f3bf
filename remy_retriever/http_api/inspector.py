"""What the retrieval inspector (``/ui``, :mod:`.ui`) asks of the store, without HTTP.

Read-only. Every call narrows to the caller's container tags exactly as ``/v1/search``
does (:meth:`.service.Service.native_search`): the tag clause joins the ``where`` of
every branch before anything is ranked, a document named by id is looked up inside the
caller's tags (another tag's is missing), and the chunks of a document are read under
the same clause. The searches are the facade's :meth:`Retriever.search`, with the
options the page sets; the defaults the page shows are the ones a search resolves to
(the collection's tuned config over the library's defaults).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InvalidInputError
from ..memory import public_metadata, wire_document_id
from ..retriever import StoredDocument
from ..schema.document import CONTAINER_TAG_KEY, Chunk
from ..schema.filters import and_where, parse_where, scope_where
from ..schema.options import resolve_options
from .auth import Principal
from .service import Service

__all__ = ["MODES", "Inspector"]

#: The modes the page offers, and the compare view's columns, in order.
MODES = ("lexical", "semantic", "hybrid")
#: The fusion options the page may set (the others keep what the store resolves).
FUSION_OPTIONS = ("fusion", "alpha", "rrf_k", "weights")
#: Documents one listing returns at most.
MAX_LISTED = 500


class Inspector:
    """The inspector's reads over ``service``'s document store."""

    def __init__(self, service: Service) -> None:
        self.service = service

    @property
    def _retriever(self) -> Any:
        return self.service.retriever

    def _where(self, principal: Principal, where: Mapping[str, Any] | None) -> Any:
        return and_where(where, scope_where(principal.scope(None), key=CONTAINER_TAG_KEY))

    # -- the controls -----------------------------------------------------------------

    def defaults(self) -> dict[str, Any]:
        """The options a search with none set runs with, and whether rerank is offered."""
        opts = resolve_options(self._retriever.search_config)
        return {
            "mode": opts.mode,
            "k": opts.k,
            "fusion": opts.fusion,
            "alpha": opts.alpha,
            "rrfK": opts.rrf_k,
            "weights": dict(opts.branch_weights),
            "tuned": sorted(self._retriever.search_config),
            "reranker": self._retriever.reranker is not None,
            "modes": list(MODES),
        }

    @staticmethod
    def check_where(where: object) -> str | None:
        """The library's own complaint about ``where``, or ``None`` when it is valid."""
        try:
            parse_where(where)
        except InvalidInputError as exc:
            return str(exc)
        return None

    # -- searches ---------------------------------------------------------------------

    def search(
        self,
        principal: Principal,
        query: str,
        *,
        mode: str,
        k: int,
        where: Mapping[str, Any] | None,
        rerank: bool,
        fusion: Mapping[str, Any],
    ) -> list[dict[str, Any]]:
        """One explained search: hits with branch ranks, contributions, matches and a
        chunk of context either side, in the wire form of ``/v1/search``."""
        unknown = sorted(set(fusion) - set(FUSION_OPTIONS))
        if unknown:
            msg = f"unknown fusion option(s) {unknown}; use any of {list(FUSION_OPTIONS)}"
            raise InvalidInputError(msg)
        hits = self._retriever.search(
            query,
            k=k,
            mode=mode,
            where=self._where(principal, where),
            rerank=rerank,
            explain=True,
            expand=1,
            highlight=True,
            **fusion,
        )
        return [_public_hit(h.to_dict()) for h in hits]

    def compare(
        self,
        principal: Principal,
        query: str,
        *,
        k: int,
        where: Mapping[str, Any] | None,
        fusion: Mapping[str, Any],
    ) -> dict[str, list[dict[str, Any]]]:
        """The same query in each mode, for the compare view's columns."""
        return {
            mode: self.search(
                principal, query, mode=mode, k=k, where=where, rerank=False, fusion=fusion
            )
            for mode in MODES
        }

    # -- documents --------------------------------------------------------------------

    def documents(self, principal: Principal, text: str = "") -> dict[str, Any]:
        """The caller's documents (at most :data:`MAX_LISTED`), those whose id, title or
        source contain ``text`` (any case) when it is given."""
        ids = self._retriever.document_ids(self._where(principal, None))
        stored = self._retriever.get_documents(ids)
        needle = text.strip().lower()
        rows = [_document_row(s) for s in stored.values()]
        if needle:
            rows = [
                r
                for r in rows
                if any(needle in str(r[f] or "").lower() for f in ("id", "title", "source"))
            ]
        rows.sort(key=lambda r: str(r["id"]))
        return {"documents": rows[:MAX_LISTED], "total": len(rows)}

    def document(self, principal: Principal, doc_id: str) -> dict[str, Any]:
        """One document of the caller's, with its chunks in order (offsets, pages)."""
        stored = self.service.documents.visible(doc_id, scope=principal.tags)
        doc = stored.document
        ids = [
            Chunk(document_id=doc.id, position=i, text="", start=0, end=0).id
            for i in range(stored.chunk_count)
        ]
        chunks = self._retriever.get_chunks(ids, where=self._where(principal, None))
        out = _document_row(stored)
        out["chunks"] = [
            {"id": c.id, "text": c.text, "citation": c.citation.to_dict()} for c in chunks.values()
        ]
        out["pageStarts"] = list(doc.pages or ())
        return out


def _document_row(stored: StoredDocument) -> dict[str, Any]:
    doc = stored.document
    tag = doc.metadata.get(CONTAINER_TAG_KEY)
    return {
        "id": wire_document_id(doc.id, doc.metadata),
        "storedId": doc.id,
        "title": doc.title,
        "source": doc.path or doc.url,
        "url": doc.url,
        "type": doc.type,
        "tags": [tag] if isinstance(tag, str) else [],
        "chunkCount": stored.chunk_count,
        "pages": len(doc.pages) if doc.pages else None,
        "metadata": public_metadata(doc.metadata),
        "updatedAt": stored.updated_at,
    }


def _public_hit(hit: dict[str, Any]) -> dict[str, Any]:
    """A hit as the page shows it: the user's metadata only."""
    if "metadata" in hit:
        hit["metadata"] = public_metadata(hit["metadata"])
    return hit
