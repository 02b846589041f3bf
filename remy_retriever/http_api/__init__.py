"""``remy serve``: a self-hosted, supermemory-compatible HTTP API on remy-retriever.

A door on top of the engine (like the CLI): FastAPI and uvicorn (the ``server`` extra)
are imported only here, never by ``import remy_retriever``. Modules: :mod:`.auth` (API
keys bound to container tags), :mod:`.wire` (request and response bodies),
:mod:`.documents` (a document's one container tag, the SDK's document types; the
documents and the memory rule themselves are the engine's
:class:`~remy_retriever.memory.LinkedDocuments`),
:mod:`.service` (what each route does), :mod:`.app` (the FastAPI application),
:mod:`.ui` and :mod:`.inspector` (the read-only retrieval inspector at ``/ui``).
"""

from __future__ import annotations

from .app import DEFAULT_MAX_BODY_BYTES, create_app
from .auth import ApiKey, KeyRing, parse_api_key
from .service import Service

__all__ = ["DEFAULT_MAX_BODY_BYTES", "ApiKey", "KeyRing", "Service", "create_app", "parse_api_key"]
