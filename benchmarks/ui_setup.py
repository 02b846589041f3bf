"""What the inspector's screenshot script and latency benchmark share: a real
``remy serve`` on a fresh store seeded through its API (the example guides and a
three-page PDF, the browser tests' corpus), and Debian's Chromium driven by Playwright.

Used as a context manager: ``with inspector() as (url, key, browser): ...``."""

from __future__ import annotations

import contextlib
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks import common

_TESTS = common.ROOT / "tests"
for _folder in (_TESTS, _TESTS / "browser", _TESTS / "integration" / "serve"):
    if str(_folder) not in sys.path:
        sys.path.insert(0, str(_folder))

from browser_support import ADMIN, CHROMIUM, chromium_args, seed_corpus  # noqa: E402
from remy_serve_support import RemyServer  # noqa: E402


@contextlib.contextmanager
def inspector() -> Iterator[tuple[str, str, Any]]:
    """``(server URL, admin key, Playwright browser)`` over a seeded store."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="remy-ui-") as tmp:
        server = RemyServer(Path(tmp) / "db").start()
        try:
            seed_corpus(server.url)
            with sync_playwright() as pw:
                browser = pw.chromium.launch(
                    executable_path=CHROMIUM, args=chromium_args(), headless=True
                )
                try:
                    yield server.url, ADMIN, browser
                finally:
                    browser.close()
        finally:
            server.stop()


def open_with_key(browser: Any, url: str, key: str, path: str) -> Any:
    """A page of the inspector at ``path`` with ``key`` entered in its key form."""
    page = browser.new_page(viewport={"width": 1360, "height": 900})
    page.goto(url + "/ui/")
    page.wait_for_selector("#key-panel:not([hidden])")
    page.fill("#key", key)
    page.click("#key-form button")
    page.wait_for_selector("body[data-ready='1']")
    page.goto(url + path)
    page.wait_for_selector("body[data-ready='1']")
    return page
