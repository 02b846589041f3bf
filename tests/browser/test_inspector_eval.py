"""The eval report in the browser: `remy eval --html` writes a self-contained report
(opened from its file), and `remy serve --eval-report` shows it at /ui/eval, where each
of the queries hybrid loses most links to the compare view of that query."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest
from browser_support import ADMIN, use_key
from remy_serve_support import RemyServer

from remy_retriever.evaluation.report import read_report_data

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: (query, the judged passage, a keyword-stuffed trap that lexical search prefers).
PAIRS = [
    (
        "how do plants make food from sunlight",
        "Photosynthesis converts light energy into chemical energy stored as glucose "
        "inside chloroplasts.",
        "Garden shop tags: plants, food, sunlight, make, how, do - keyword list for the till.",
    ),
    (
        "why is the sky blue during the day",
        "Rayleigh scattering favours short wavelengths, so air molecules spread violet and "
        "azure light across the heavens.",
        "Sky blue day paint: why is this colour called sky blue? Order form for the day shift.",
    ),
    (
        "where do penguins live",
        "Emperor penguins breed on Antarctic sea ice through the polar winter.",
        "Live penguins where do tickets: zoo gift voucher terms and conditions.",
    ),
    (
        "why does bread rise",
        "Yeast ferments sugars and releases carbon dioxide, which inflates the dough.",
        "Bread rise why does: bakery loyalty card stamps and prices.",
    ),
]


def _beir(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    docs, queries, qrels = [], [], []
    for i, (query, judged, trap) in enumerate(PAIRS):
        docs += [{"_id": f"r{i}", "title": "", "text": judged}, {"_id": f"t{i}", "text": trap}]
        queries.append({"_id": f"q{i}", "text": query})
        qrels.append(f"q{i}\tr{i}\t1")
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs), "utf-8")
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries), "utf-8")
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "\n".join(qrels) + "\n", "utf-8"
    )
    return root


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RemyServer, Path]]:
    """``remy eval --html`` on a tiny judged set, then ``remy serve`` on the index it
    built, showing the report."""
    root = tmp_path_factory.mktemp("eval")
    cache, report = root / "cache", root / "report.html"
    server = RemyServer(root / "placeholder")  # only for its free port
    ui_url = f"{server.url}/ui/"
    command = [sys.executable, "-m", "remy_retriever.cli", "eval", str(_beir(root / "tiny"))]
    command += ["--cache", str(cache), "--html", str(report), "--ui-url", ui_url]
    subprocess.run([*command, "--no-progress"], check=True, capture_output=True, timeout=600)
    (store,) = cache.iterdir()
    server.store = ["--db", str(store), "--collection", "beir"]
    server.extra = ["--eval-report", str(report)]
    server.start()
    try:
        yield server, report
    finally:
        server.stop()


def test_the_report_file_opens_self_contained(evaluated: Any, page: Any) -> None:
    server, report = evaluated
    page.goto(report.as_uri())
    assert page.locator("#means tr").count() == 3
    assert page.locator("svg circle").count() == len(PAIRS)
    data = read_report_data(report.read_text(encoding="utf-8"))
    assert data["worst"], "the tiny set must hold a query where hybrid loses"
    links = [a.get_attribute("href") for a in page.locator("#worst a").all()]
    assert len(links) == len(data["worst"])
    assert all(link.startswith(server.url + "/ui/compare?q=") for link in links)
    assert page.remy_events == []  # it loaded nothing and ran nothing


def test_the_worst_query_links_land_on_the_compare_view(evaluated: Any, page: Any) -> None:
    server, report = evaluated
    page.remy_url = server.url
    data = read_report_data(report.read_text(encoding="utf-8"))
    by_id = {row["id"]: row for row in data["queries"]}
    use_key(page, ADMIN)
    page.goto(server.url + "/ui/eval")
    page.wait_for_selector("body[data-loaded]")
    assert page.locator("#scatter circle").count() == len(PAIRS)
    assert page.locator("#scatter circle.loss").count() == len(data["worst"])
    shown = [a.inner_text() for a in page.locator("#worst a").all()]
    assert shown == [by_id[q]["query"] for q in data["worst"]]
    page.locator("#worst a").first.click()
    page.wait_for_selector("body[data-compared]")
    assert urlparse(page.url).path == "/ui/compare"
    assert parse_qs(urlparse(page.url).query)["q"] == [shown[0]]
    worst = by_id[data["worst"][0]]
    judged = "r" + worst["id"][1:]
    best = "semantic" if worst["semantic"] >= worst["lexical"] else "lexical"

    def position(mode: str) -> int:
        texts = [li.inner_text() for li in page.locator(f"ol[data-mode={mode}] li").all()]
        found = [i for i, text in enumerate(texts) if text.split()[1] == judged]
        return found[0] if found else len(texts)

    # Where hybrid lost, the judged passage sits lower in hybrid than in the best branch.
    assert position("hybrid") > position(best)
