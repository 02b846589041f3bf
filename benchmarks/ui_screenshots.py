"""Screenshots of the inspector's search and compare views from a real browser run,
for the README (``docs/images/inspector-search.png``, ``inspector-compare.png``):

    python -m benchmarks.ui_screenshots
"""

from __future__ import annotations

from urllib.parse import quote

from benchmarks import common
from benchmarks.ui_setup import inspector, open_with_key

OUT = common.ROOT / "docs" / "images"
QUERY = "how does hybrid fusion weigh bm25 against embeddings"


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    with inspector() as (url, key, browser):
        page = open_with_key(browser, url, key, "/ui/?q=" + quote(QUERY))
        page.wait_for_selector("body[data-searches]")
        first = page.locator("li.hit").first
        first.locator(".explain > button").click()
        if first.locator(".neighbours").count():
            first.locator(".neighbours > button").click()
        page.screenshot(path=str(OUT / "inspector-search.png"), full_page=False)
        page.goto(url + "/ui/compare?k=8&q=" + quote(QUERY))
        page.wait_for_selector("body[data-compared]")
        page.screenshot(path=str(OUT / "inspector-compare.png"), full_page=False)
    print(f"wrote {OUT / 'inspector-search.png'} and {OUT / 'inspector-compare.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
