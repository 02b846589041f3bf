"""Fixtures for the inspector's browser tests: a real ``remy serve`` on a small corpus
(the example Markdown guides, a three-page PDF, an XSS-laden document and another
tenant's secret), and a real Chromium from the system packages, driven by Playwright.

Chromium is Debian's (``apt-get install chromium``; ``.ci/run`` installs it): Playwright's
own browser download is never used. Without ``/usr/bin/chromium`` (or
``REMY_CHROMIUM``) the tests skip, saying so."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
SERVE = HERE.parent / "integration" / "serve"
for folder in (HERE, SERVE):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

from browser_support import ADMIN, CHROMIUM, chromium_args, seed_corpus, use_key  # noqa: E402
from remy_serve_support import RemyServer  # noqa: E402

pytest.importorskip("fastapi", reason="the server extra is not installed")
pytest.importorskip("playwright", reason="playwright is not installed (the dev extra)")

pytestmark = pytest.mark.browser


@pytest.fixture(scope="session")
def chromium_path() -> str:
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        pytest.skip(
            f"no Chromium at {CHROMIUM}: install it with `apt-get install -y chromium` "
            "(.ci/run does) or point REMY_CHROMIUM at one"
        )
    return CHROMIUM


@pytest.fixture(scope="module")
def browser(chromium_path: str) -> Iterator[Any]:
    """One Chromium per test module. Not per session: Playwright's sync API keeps an
    event loop running in this thread while it is open, and every later test that runs
    its own loop (``asyncio.run``, the frameworks' async calls) would then fail."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        launched = pw.chromium.launch(
            executable_path=chromium_path, args=chromium_args(), headless=True
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RemyServer]:
    """``remy serve`` with the test keys, on the seeded corpus."""
    running = RemyServer(tmp_path_factory.mktemp("inspector") / "db").start()
    try:
        seed_corpus(running.url)
        yield running
    finally:
        running.stop()
    assert not running.tracebacks(), running.log()


@pytest.fixture
def page(browser: Any, served: RemyServer) -> Iterator[Any]:
    """A fresh browser context with the admin key already entered, recording every
    dialog and console message of the page (``page.remy_events``)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    opened = context.new_page()
    events: list[str] = []
    opened.on("dialog", lambda d: (events.append(f"dialog: {d.message}"), d.dismiss()))
    opened.on("console", lambda m: events.append(f"console {m.type}: {m.text}"))
    opened.on("pageerror", lambda e: events.append(f"pageerror: {e}"))
    opened.remy_events = events
    opened.remy_url = served.url
    try:
        yield opened
    finally:
        context.close()


@pytest.fixture
def admin_page(page: Any) -> Any:
    use_key(page, ADMIN)
    return page
