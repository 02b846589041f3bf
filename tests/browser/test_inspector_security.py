"""The inspector's safety in a real Chromium: hostile document text and metadata stay
text (no dialog, no console message, no element they name); the page refuses without
a key; a key bound to one tag never sees another tag's documents in any view."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx
import pytest
from browser_support import ALICE, BOB, BOB_SECRET, XSS_ID, XSS_TEXT, use_key

from remy_retriever.http_api.ui import CSP

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SECRET_MARK = "QZ7731"


def _no_script_ran(page: Any) -> None:
    events = page.remy_events
    assert not [e for e in events if e.startswith(("dialog", "pageerror"))], events
    assert not [e for e in events if "xss" in e], events
    # No element the hostile text names exists in the views, and no javascript: link.
    assert page.locator("main img, main script, main iframe, main object").count() == 0
    assert page.locator("main svg[onload], main [onerror]").count() == 0
    assert page.locator("a[href^='javascript' i]").count() == 0


def _wait_searched(page: Any) -> None:
    page.wait_for_function("() => Number(document.body.dataset.searches || 0) > 0")


def test_hostile_text_and_metadata_are_shown_as_text_in_every_view(page: Any) -> None:
    use_key(page, ALICE)
    response = page.goto(page.remy_url + "/ui/?q=zebrafinch%20report&mode=lexical")
    assert response.headers["content-security-policy"] == CSP
    _wait_searched(page)
    hit = page.locator("li.hit").first
    assert "<script>alert('xss-script')</script>" in hit.inner_text()
    assert "onerror=\"alert('xss-img')\"" in hit.inner_text()
    hit.locator(".explain > button").click()
    _no_script_ran(page)

    page.goto(page.remy_url + "/ui/compare?q=" + quote("<img src=x onerror=alert('xss-q')>"))
    page.wait_for_selector("body[data-compared]")
    assert page.input_value("#q") == "<img src=x onerror=alert('xss-q')>"
    _no_script_ran(page)

    page.goto(page.remy_url + "/ui/documents")
    page.wait_for_selector("body[data-listed]")
    page.goto(page.remy_url + "/ui/document?id=" + XSS_ID)
    page.wait_for_selector("body[data-loaded]")
    assert page.inner_text("dd[data-field='metadata.source']") == "javascript:alert('xss-meta')"
    assert (
        page.inner_text("dd[data-field='metadata.note']")
        == "<img src=x onerror=\"alert('xss-meta-img')\">"
    )
    # A list value is shown as its JSON, so its items stay apart and stay text.
    tags = page.inner_text("dd[data-field='metadata.tags']")
    assert tags == '["<b>bold</b>","javascript:alert(\'xss-tag\')"]'
    assert "<svg onload=" in page.inner_text("#chunks")
    assert XSS_TEXT.splitlines()[-1][:40] in page.inner_text("#chunks")
    _no_script_ran(page)


def test_an_inline_script_would_be_refused_by_the_pages_policy(page: Any) -> None:
    """The CSP is real: a script element added to the page does not run (a console
    report of the violation instead), so even a rendering slip could not run code."""
    use_key(page, ALICE)
    page.evaluate(
        "() => { const s = document.createElement('script'); "
        "s.textContent = 'window.__ran = 1'; document.body.append(s); }"
    )
    assert page.evaluate("() => window.__ran === undefined")
    assert any("Content Security Policy" in e for e in page.remy_events), page.remy_events


def test_the_page_refuses_without_a_key(page: Any) -> None:
    page.goto(page.remy_url + "/ui/?q=lighthouse")
    page.wait_for_selector("#key-panel:not([hidden])")
    assert page.locator("#main").is_hidden()
    assert page.locator("li.hit").count() == 0
    status = page.evaluate(
        "() => fetch('/ui/api/search', {method: 'POST', headers: {'Content-Type': "
        "'application/json'}, body: JSON.stringify({q: 'lighthouse'})}).then(r => r.status)"
    )
    assert status == 401
    for path in ("/ui/api/config", "/ui/api/documents", "/ui/api/document?id=lighthouse"):
        assert httpx.get(page.remy_url + path).status_code == 401, path
    page.fill("#key", "not-a-key-0123456789abcdef")
    page.click("#key-form button")
    page.wait_for_function("() => document.getElementById('key-error').textContent !== ''")
    assert page.inner_text("#key-error") == "invalid API key"
    assert page.locator("#main").is_hidden()


def test_a_tag_bound_key_never_sees_another_tags_documents(page: Any) -> None:
    query = "vault combination of the zebrafinch aviary"
    use_key(page, BOB)  # the control: bob's key does see it
    page.goto(page.remy_url + "/ui/?mode=lexical&q=" + quote(query))
    _wait_searched(page)
    assert SECRET_MARK in page.inner_text("#hits")

    page.evaluate("() => sessionStorage.clear()")
    use_key(page, ALICE)
    for mode in ("lexical", "semantic", "hybrid"):
        page.goto(page.remy_url + f"/ui/?mode={mode}&k=100&q=" + quote(query))
        _wait_searched(page)
        assert page.locator("li.hit").count() > 0  # alice's own zebrafinch document
        assert SECRET_MARK not in page.content()
    where = quote('{"container_tag": "bob"}')
    page.goto(page.remy_url + f"/ui/?q={quote(query)}&where={where}")
    _wait_searched(page)
    assert page.locator("li.hit").count() == 0
    page.goto(page.remy_url + "/ui/compare?k=100&q=" + quote(query))
    page.wait_for_selector("body[data-compared]")
    assert SECRET_MARK not in page.content()
    page.goto(page.remy_url + "/ui/documents")
    page.wait_for_selector("body[data-listed]")
    listed = [r.get_attribute("data-document") for r in page.locator("#documents tbody tr").all()]
    assert "bob-vault" not in listed and "lighthouse" in listed
    for doc_id in ("bob-vault", "bob@bob-vault"):
        page.goto(page.remy_url + "/ui/document?id=" + quote(doc_id))
        page.wait_for_function("() => document.getElementById('doc-error').textContent !== ''")
        assert "no document" in page.inner_text("#doc-error")
        assert SECRET_MARK not in page.content()
    assert BOB_SECRET not in page.content()
