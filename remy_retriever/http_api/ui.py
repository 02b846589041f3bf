"""The retrieval inspector: a read-only web page of ``remy serve`` at ``/ui``.

The pages (``/ui``, ``/ui/compare``, ``/ui/documents``, ``/ui/document``, ``/ui/eval``)
are one server-rendered shell each, holding no store data: the controls and empty
places for results. The script (``/ui/static/inspector.js``, shipped in the package
next to its stylesheet) reads everything through the JSON routes under ``/ui/api/``,
which take the same ``Authorization: Bearer KEY`` header as the API and narrow to the
key's container tags in the engine's calls (:mod:`.inspector`). A browser cannot put a
header on a page load, so the page asks for the key once, keeps it in the tab's
``sessionStorage`` and sends it with each call; with keys configured, every data route
answers 401 without one, and the page then shows the key form and nothing else.

Safety: every answer of these routes carries a strict Content-Security-Policy (no inline
script or style, nothing from another origin, no framing); the script writes data with
``textContent`` and DOM nodes only, never as HTML; every route is a read (GET, or a POST
that searches), so the UI changes nothing in the store.
"""

from __future__ import annotations

import html
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field

from ..errors import InvalidInputError
from ..evaluation.report import read_report_data
from .auth import KeyRing, NotFoundError, Principal
from .inspector import Inspector
from .service import Service

__all__ = ["CSP", "install_ui"]

#: The page's Content-Security-Policy: its own script and stylesheet, calls to itself.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_STATIC = {"inspector.js": "text/javascript", "inspector.css": "text/css"}
_VIEWS = {
    "search": "Search",
    "compare": "Compare",
    "documents": "Documents",
    "document": "Document",
    "eval": "Eval",
}
Json = dict[str, Any]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class UiSearchBody(_Body):
    """A search from the page: ``/v1/search``'s fields plus the fusion options."""

    q: str = Field(min_length=1, max_length=10_000)
    mode: Literal["semantic", "lexical", "hybrid"] = "hybrid"
    k: int = Field(default=10, ge=1, le=100)
    where: dict[str, Any] | None = None
    rerank: bool = False
    fusion: Literal["convex", "rrf"] | None = None
    alpha: float | None = Field(default=None, ge=0.0, le=1.0)
    rrf_k: float | None = Field(default=None, gt=0.0, le=10_000.0)
    weights: dict[str, float] | None = None

    def fusion_options(self) -> dict[str, Any]:
        given = {
            "fusion": self.fusion,
            "alpha": self.alpha,
            "rrf_k": self.rrf_k,
            "weights": self.weights,
        }
        return {k: v for k, v in given.items() if v is not None}


class WhereBody(_Body):
    where: Any = None


def _principal(request: Request) -> Principal:
    keys: KeyRing = request.app.state.keys
    return keys.principal(request.headers.get("authorization"))


Caller = Annotated[Principal, Depends(_principal)]


def _json(data: Any) -> JSONResponse:
    return JSONResponse(data, headers=_HEADERS)


def install_ui(app: FastAPI, service: Service, *, eval_report: Path | None = None) -> None:
    """Add the inspector's routes to ``app`` (``eval_report``: the HTML report of
    ``remy eval --html`` that ``/ui/eval`` shows)."""
    inspector = Inspector(service)

    @app.get("/ui", include_in_schema=False)
    @app.get("/ui/", include_in_schema=False)
    def search_page() -> Response:
        return _page("search")

    @app.get("/ui/{view}", include_in_schema=False)
    def other_page(view: str) -> Response:
        if view not in _VIEWS or view == "search":
            msg = f"no inspector page {view!r}; open /ui"
            raise NotFoundError(msg)
        return _page(view)

    @app.get("/ui/static/{name}", include_in_schema=False)
    def static(name: str) -> Response:
        if name not in _STATIC:
            msg = f"no inspector file {name!r}"
            raise NotFoundError(msg)
        text = (resources.files(__package__) / "ui_static" / name).read_bytes()
        return Response(text, media_type=_STATIC[name], headers=_HEADERS)

    @app.get("/ui/api/config", include_in_schema=False)
    def config(caller: Caller) -> Response:
        return _json(
            {
                **inspector.defaults(),
                "tags": None if caller.tags is None else sorted(caller.tags),
                "evalReport": eval_report is not None,
            }
        )

    @app.post("/ui/api/where", include_in_schema=False)
    def check_where(body: WhereBody, caller: Caller) -> Response:
        return _json({"error": inspector.check_where(body.where)})

    @app.post("/ui/api/search", include_in_schema=False)
    def search(body: UiSearchBody, caller: Caller) -> Response:
        results = inspector.search(
            caller,
            body.q,
            mode=body.mode,
            k=body.k,
            where=body.where,
            rerank=body.rerank,
            fusion=body.fusion_options(),
        )
        return _json({"results": results, "total": len(results)})

    @app.post("/ui/api/compare", include_in_schema=False)
    def compare(body: UiSearchBody, caller: Caller) -> Response:
        columns = inspector.compare(
            caller, body.q, k=body.k, where=body.where, fusion=body.fusion_options()
        )
        return _json({"columns": columns})

    @app.get("/ui/api/documents", include_in_schema=False)
    def documents(caller: Caller, q: str = "") -> Response:
        return _json(inspector.documents(caller, q[:200]))

    @app.get("/ui/api/document", include_in_schema=False)
    def document(caller: Caller, id: str) -> Response:
        return _json(inspector.document(caller, id))

    @app.get("/ui/api/eval", include_in_schema=False)
    def eval_data(caller: Caller) -> Response:
        if eval_report is None:
            msg = "no eval report: start the server with --eval-report FILE (remy eval --html)"
            raise NotFoundError(msg)
        try:
            data = read_report_data(eval_report.read_text(encoding="utf-8"))
        except (OSError, InvalidInputError) as exc:
            msg = f"cannot read the eval report {str(eval_report)!r}: {exc}"
            raise NotFoundError(msg) from None
        return _json(data)


def _page(view: str) -> Response:
    nav = "".join(
        f'<a href="/ui/{"" if name == "search" else name}" data-nav="{name}"'
        f"{' aria-current=page' if name == view else ''}>{html.escape(label)}</a>"
        for name, label in _VIEWS.items()
        if name != "document"
    )
    body = _TEMPLATE.format(
        view=html.escape(view),
        title=html.escape(_VIEWS[view]),
        nav=nav,
        content=_CONTENT[view],
    )
    return Response(body, media_type="text/html; charset=utf-8", headers=_HEADERS)


_TEMPLATE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>remy inspector: {title}</title>
<link rel="stylesheet" href="/ui/static/inspector.css">
<script src="/ui/static/inspector.js" defer></script>
</head>
<body data-view="{view}">
<header>
<strong>remy inspector</strong>
<nav>{nav}</nav>
<span id="scope" class="muted"></span>
</header>
<section id="key-panel" hidden>
<form id="key-form">
<label>This server needs an API key: <input id="key" type="password"
autocomplete="off" size="40"></label>
<button type="submit">Use key</button>
</form>
<p id="key-error" class="error" role="alert"></p>
</section>
<main id="main" hidden>
{content}
</main>
<p id="status" class="muted" role="status"></p>
</body>
</html>
"""

_SEARCH_FORM = """<form id="search-form" class="controls">
<input id="q" name="q" type="search" placeholder="query" size="40" required>
<label>mode <select id="mode">
<option value="lexical">lexical</option>
<option value="semantic">semantic</option>
<option value="hybrid">hybrid</option>
</select></label>
<label>k <input id="k" type="number" min="1" max="100" size="4"></label>
<label>fusion <select id="fusion">
<option value="convex">convex</option>
<option value="rrf">rrf</option>
</select></label>
<label class="convex">alpha <input id="alpha" type="number" min="0" max="1" step="0.05"></label>
<label class="rrf">rrf_k <input id="rrf-k" type="number" min="1" step="1"></label>
<label class="rrf">weight lexical <input id="w-lexical" type="number" min="0" step="0.1"></label>
<label class="rrf">weight semantic <input id="w-semantic" type="number" min="0" step="0.1">
</label>
<label id="rerank-box" hidden><input id="rerank" type="checkbox"> rerank</label>
<label class="where">where <textarea id="where" rows="1" cols="40"
placeholder='{"lang": "en"}'></textarea></label>
<button type="submit">Search</button>
<p id="where-error" class="error" role="alert"></p>
<p id="defaults" class="muted"></p>
</form>
"""

_CONTENT = {
    "search": _SEARCH_FORM + '<p id="search-error" class="error" role="alert"></p>'
    '<ol id="hits"></ol>',
    "compare": _SEARCH_FORM + '<p id="search-error" class="error" role="alert"></p>'
    '<div id="compare"><svg id="joins" aria-hidden="true"></svg>'
    '<div id="columns"></div></div>',
    "documents": '<form id="doc-search" class="controls"><input id="doc-filter" type="search" '
    'placeholder="filter by id, title or source" size="40"></form>'
    '<table id="documents"><thead><tr><th>id</th><th>title</th><th>source</th><th>tags</th>'
    "<th>chunks</th><th>pages</th></tr></thead><tbody></tbody></table>",
    "document": '<p id="doc-error" class="error" role="alert"></p><article id="document">'
    '<h2 id="doc-title"></h2><dl id="doc-meta"></dl><ol id="chunks"></ol></article>',
    "eval": '<p id="eval-error" class="error" role="alert"></p><section id="eval">'
    '<h2 id="eval-title"></h2><table id="eval-means"></table>'
    '<svg id="scatter" viewBox="0 0 320 320" width="320" height="320"></svg>'
    '<h3>Where hybrid loses most</h3><ol id="worst"></ol></section>',
}
