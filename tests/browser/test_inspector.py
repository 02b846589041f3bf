"""The retrieval inspector (``/ui``) in a real Chromium against a real ``remy serve``:
searching, modes, explain, neighbours, the filter editor, the compare view, documents
and a PDF's pages. What the page shows is checked against what the API answers for the
same search, so a page that invents or drops numbers fails."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from browser_support import ADMIN

from remy_retriever.errors import InvalidInputError
from remy_retriever.schema.filters import parse_where

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _search(page: Any, query: str, mode: str = "hybrid") -> None:
    before = page.get_attribute("body", "data-searches") or "0"
    page.select_option("#mode", mode)
    if page.get_attribute("body", "data-searches") == before and page.input_value("#q"):
        page.wait_for_function(f"() => document.body.dataset.searches !== '{before}'")
        before = page.get_attribute("body", "data-searches")
    page.fill("#q", query)
    page.click("#search-form button[type=submit]")
    page.wait_for_function(f"() => (document.body.dataset.searches || '0') !== '{before}'")


def _api(page: Any, query: str, mode: str, **extra: Any) -> list[dict[str, Any]]:
    reply = httpx.post(
        page.remy_url + "/v1/search",
        json={"q": query, "mode": mode, "k": 10, "explain": True, "expand": 1, **extra},
        headers={"Authorization": f"Bearer {ADMIN}"},
        timeout=60,
    )
    assert reply.status_code == 200, reply.text
    return list(reply.json()["results"])


def test_a_typed_query_shows_cited_hits_linking_to_the_document_view(admin_page: Any) -> None:
    page = admin_page
    _search(page, "tide tables the lighthouse keeper reads")
    first = page.locator("li.hit").first
    citation = first.locator("a.citation")
    assert "lighthouse" in citation.inner_text()
    assert "p. 2" in citation.inner_text() or "pp. " in citation.inner_text()
    assert "chars " in citation.inner_text()
    href = citation.get_attribute("href")
    assert href.startswith("/ui/document?id=") and "#chunk-" in href
    assert page.locator("li.hit mark").count() > 0  # the matches, highlighted
    shown = [li.get_attribute("data-chunk") for li in page.locator("li.hit").all()]
    expected = [h["id"] for h in _api(page, "tide tables the lighthouse keeper reads", "hybrid")]
    assert shown == expected


@pytest.mark.parametrize("mode", ["lexical", "semantic", "hybrid"])
def test_switching_modes_shows_that_modes_ranking(admin_page: Any, mode: str) -> None:
    page = admin_page
    query = "how do I filter by metadata"
    _search(page, query, mode)
    shown = [li.get_attribute("data-chunk") for li in page.locator("li.hit").all()]
    assert shown == [h["id"] for h in _api(page, query, mode)]
    ranks = page.locator("li.hit .ranks").first.inner_text()
    if mode == "lexical":
        assert "lexical #" in ranks and "semantic —" in ranks
    if mode == "semantic":
        assert "semantic #" in ranks and "lexical —" in ranks
    page.wait_for_url(lambda url: f"mode={mode}" in url)  # the address follows the search


def test_explain_shows_each_branchs_rank_and_contribution(admin_page: Any) -> None:
    page = admin_page
    query = "reciprocal rank fusion of bm25 and embeddings"
    _search(page, query, "hybrid")
    expected = _api(page, query, "hybrid")
    for i, hit in enumerate(expected[:3]):
        item = page.locator("li.hit").nth(i)
        item.locator(".explain > button").click()
        for branch, facts in hit["explain"]["branches"].items():
            row = item.locator(f".explain tr[data-branch={branch}]")
            assert row.is_visible()
            assert row.locator("td.rank").inner_text() == f"#{facts['rank']}"
            assert row.locator("td.contribution").inner_text() == f"{facts['contribution']:.4f}"
            assert f"{branch} #{facts['rank']}" in item.locator(".ranks").inner_text()
        widths = {
            r.get_attribute("data-branch"): float(r.get_attribute("width"))
            for r in item.locator("svg.bar rect").all()
        }
        contributions = {
            b: f.get("contribution", 0.0) for b, f in hit["explain"]["branches"].items()
        }
        if len(contributions) == 2 and min(contributions.values()) > 0:
            ratio = contributions["lexical"] / contributions["semantic"]
            assert widths["lexical"] / widths["semantic"] == pytest.approx(ratio, rel=1e-3)


def test_neighbours_expand_to_the_chunks_either_side(admin_page: Any) -> None:
    page = admin_page
    query = "cross-encoder reranking depth"
    _search(page, query, "hybrid")
    expected = _api(page, query, "hybrid")
    index = next(
        i for i, h in enumerate(expected) if h["neighbors"]["before"] and h["neighbors"]["after"]
    )
    item = page.locator("li.hit").nth(index)
    before = item.locator("p.neighbour.before").first
    assert not before.is_visible()
    toggle = item.locator(".neighbours > button")
    assert toggle.get_attribute("aria-expanded") == "false"
    toggle.click()
    assert toggle.get_attribute("aria-expanded") == "true"
    assert before.is_visible()
    assert before.inner_text().endswith(expected[index]["neighbors"]["before"][0].strip())
    after = item.locator("p.neighbour.after").first
    assert after.inner_text().endswith(expected[index]["neighbors"]["after"][0].strip())
    toggle.click()  # and closed again
    assert toggle.get_attribute("aria-expanded") == "false"
    assert not before.is_visible() and not after.is_visible()


def test_a_bad_filter_shows_the_librarys_error_inline(admin_page: Any) -> None:
    page = admin_page
    bad = {"source": {"$like": "x"}}
    with pytest.raises(InvalidInputError) as caught:
        parse_where(bad)
    page.fill("#where", '{"source": {"$like": "x"}}')
    page.wait_for_function("() => document.getElementById('where-error').textContent.length > 0")
    assert page.inner_text("#where-error") == str(caught.value)
    assert page.get_attribute("#where", "aria-invalid") == "true"
    page.fill("#where", '{"source": ')
    page.wait_for_function(
        "() => document.getElementById('where-error').textContent"
        ".startsWith('where is not valid JSON')"
    )
    page.fill("#where", '{"source": "examples/corpus/filters.md"}')
    page.wait_for_function("() => document.getElementById('where-error').textContent === ''")
    _search(page, "metadata", "hybrid")
    sources = {li.locator("a.citation").inner_text() for li in page.locator("li.hit").all()}
    assert sources and all("filters" in s for s in sources)


def test_a_search_submitted_under_a_refused_filter_shows_its_error_and_no_hits(
    admin_page: Any,
) -> None:
    """Submitted at once (before the editor's own check): the filter's check and the
    search go out together, and the refused filter's error wins over any answer."""
    page = admin_page
    bad = {"tags": {"$regex": "x"}}
    with pytest.raises(InvalidInputError) as caught:
        parse_where(bad)
    page.fill("#q", "metadata")
    with page.expect_response("**/ui/api/search") as searched:
        page.evaluate(
            "(where) => { document.getElementById('where').value = where; "
            "document.getElementById('search-form').requestSubmit(); }",
            '{"tags": {"$regex": "x"}}',
        )
    assert searched.value.status == 400  # the search went out too, and was refused
    page.wait_for_function("() => document.getElementById('where-error').textContent !== ''")
    # Let the page finish with the search's answer before looking for what it drew.
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)))")
    assert page.inner_text("#where-error") == str(caught.value)
    assert page.get_attribute("#where", "aria-invalid") == "true"
    assert page.get_attribute("body", "data-searches") is None
    assert page.locator("li.hit").count() == 0
    assert page.inner_text("#search-error") == ""


def test_the_compare_view_joins_the_same_chunk_across_columns(admin_page: Any) -> None:
    page = admin_page
    page.goto(page.remy_url + "/ui/compare?q=" + "hybrid%20search%20fusion%20weights")
    page.wait_for_selector("body[data-compared]")
    columns = {
        mode: [
            li.get_attribute("data-chunk") for li in page.locator(f"ol[data-mode={mode}] li").all()
        ]
        for mode in ("lexical", "hybrid", "semantic")
    }
    for mode, ids in columns.items():
        assert ids == [h["id"] for h in _api(page, "hybrid search fusion weights", mode)], mode
    lines = page.locator("#joins line.join").all()
    joined = {(ln.get_attribute("data-from"), ln.get_attribute("data-chunk")) for ln in lines}
    expected = {("lexical", c) for c in set(columns["lexical"]) & set(columns["hybrid"])} | {
        ("hybrid", c) for c in set(columns["hybrid"]) & set(columns["semantic"])
    }
    assert joined == expected and expected
    line = lines[0]
    chunk, left, right = (line.get_attribute(a) for a in ("data-chunk", "data-from", "data-to"))
    frame = page.locator("#compare").bounding_box()
    a = page.locator(f"ol[data-mode={left}] li[data-chunk='{chunk}']").bounding_box()
    b = page.locator(f"ol[data-mode={right}] li[data-chunk='{chunk}']").bounding_box()
    assert float(line.get_attribute("x1")) == pytest.approx(a["x"] + a["width"] - frame["x"], abs=1)
    assert float(line.get_attribute("y1")) == pytest.approx(
        a["y"] + a["height"] / 2 - frame["y"], abs=1
    )
    assert float(line.get_attribute("x2")) == pytest.approx(b["x"] - frame["x"], abs=1)
    assert float(line.get_attribute("y2")) == pytest.approx(
        b["y"] + b["height"] / 2 - frame["y"], abs=1
    )


def test_the_document_view_shows_a_pdfs_pages(admin_page: Any) -> None:
    page = admin_page
    page.goto(page.remy_url + "/ui/documents")
    page.wait_for_selector("body[data-listed]")
    page.fill("#doc-filter", "lighthouse")
    page.wait_for_function("() => document.querySelectorAll('#documents tbody tr').length === 1")
    row = page.locator("#documents tbody tr")
    assert row.locator("td.pages").inner_text() == "3"
    row.locator("a").click()
    page.wait_for_selector("body[data-loaded]")
    assert page.inner_text("dd[data-field=pages]") == "3"
    chunks = page.locator("li.chunk").all()
    assert len(chunks) >= 3
    pages = [c.locator(".where").inner_text() for c in chunks]
    assert any("page 1" in p for p in pages) and any("3" in p.split("page")[-1] for p in pages)
    assert all("chars " in p for p in pages)
    texts = [c.locator("pre").inner_text() for c in chunks]
    assert "Page one" in texts[0] and "Page three" in texts[-1]
