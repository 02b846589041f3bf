"""A server with tag-bound keys counts BM25 statistics inside each
caller's scope (``--bm25-statistics filter`` is then the default), so tenant ``bob``'s
scores do not move when tenant ``alice`` writes documents holding his query's terms.

What stays shared is the average chunk length of BM25's length normalisation (tantivy
has no per-query value; SECURITY.md says so): the last test shows it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from remy_serve_support import ALICE, BOB, RemyServer

from remy_retriever.cli import build_parser
from remy_retriever.cli.common import bm25_statistics

ALICE_H = {"Authorization": f"Bearer {ALICE}"}
BOB_H = {"Authorization": f"Bearer {BOB}"}
QUERY = "quokka burrow"
#: Every chunk has four words, so only N and the document frequencies could differ.
BOB_TEXTS = (
    "quokka burrow island sand",
    "quokka hopping forest trail",
    "wombat burrow grassland dusk",
    "kangaroo resting shade tree",
)


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RemyServer]:
    """A fresh ``remy serve`` (keys bound to tags, no ``--bm25-statistics``) with Bob's
    documents."""
    running = RemyServer(tmp_path_factory.mktemp("scores") / "db").start()
    try:
        for i, text in enumerate(BOB_TEXTS):
            _add(running, BOB_H, f"bob-{i}", text)
        yield running
    finally:
        running.stop()
    assert not running.tracebacks(), running.log()


def _add(server: RemyServer, headers: dict[str, str], custom_id: str, text: str) -> None:
    body = {"content": text, "customId": custom_id}
    reply = httpx.post(server.url + "/v3/documents", json=body, headers=headers, timeout=120)
    assert reply.status_code == 200, reply.text


def bob_scores(server: RemyServer) -> dict[str, Any]:
    """Bob's lexical scores (remy's own search) and his document search scores."""
    lexical = httpx.post(
        server.url + "/v1/search",
        json={"q": QUERY, "mode": "lexical", "k": 10},
        headers=BOB_H,
        timeout=120,
    ).json()
    documents = httpx.post(
        server.url + "/v3/search", json={"q": QUERY, "limit": 10}, headers=BOB_H, timeout=120
    ).json()
    return {
        "lexical": {h["citation"]["documentId"]: h["score"] for h in lexical["results"]},
        "documents": {r["documentId"]: r["score"] for r in documents["results"]},
    }


def _same(before: dict[str, Any], after: dict[str, Any]) -> None:
    for part in ("lexical", "documents"):
        assert before[part].keys() == after[part].keys(), part
        for doc_id, score in before[part].items():
            assert after[part][doc_id] == pytest.approx(score, rel=1e-6), (part, doc_id)


@pytest.mark.slow
def test_bobs_scores_do_not_move_when_alice_writes_his_terms(scored: RemyServer) -> None:
    before = bob_scores(scored)
    assert before["lexical"], before
    for i in range(12):
        _add(scored, ALICE_H, f"alice-{i}", f"quokka burrow colony n{i}")
    _same(before, bob_scores(scored))


@pytest.mark.slow
def test_the_average_chunk_length_is_still_shared(scored: RemyServer) -> None:
    """Long chunks of Alice's change BM25's length normalisation for everyone."""
    before = bob_scores(scored)
    long_text = " ".join(f"meadow{i}" for i in range(60))
    for i in range(6):
        _add(scored, ALICE_H, f"alice-long-{i}", long_text)
    after = bob_scores(scored)
    assert after["lexical"].keys() == before["lexical"].keys()
    assert after["lexical"] != before["lexical"]


@pytest.mark.parametrize(
    ("argv", "boundary", "expected"),
    [
        (["serve"], True, "filter"),  # a tag-bound key
        (["serve"], False, "collection"),
        (["serve", "--bm25-statistics", "filter"], False, "filter"),  # the whole store
        (["serve", "--bm25-statistics", "collection"], True, "collection"),
        (["mcp", "--container-tag", "alice"], True, "filter"),  # pinned
        (["mcp", "--bm25-statistics", "filter"], False, "filter"),
    ],
)
def test_the_servers_count_statistics_inside_the_scope_where_a_boundary_is_enforced(
    argv: list[str], boundary: bool, expected: str
) -> None:
    args = build_parser().parse_args(argv)
    assert bm25_statistics(args, boundary=boundary) == expected
