"""Output that misled a newcomer. Document search marked every chunk of
a small store relevant, even at score 0; ``remy eval`` timed later modes with the query
vectors an earlier mode had cached; the memory CLI printed relative versions (``(-1)``);
``--prune`` said "gone from disk" of files still on disk. Real Chroma, tantivy, MiniLM."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from remy_retriever import Retriever
from remy_retriever.cli import main

from .conftest import CountingEmbedder

pytestmark = pytest.mark.slow


def test_a_chunk_scoring_zero_is_never_marked_relevant(
    tmp_path: Path, corpus_dir: Path, minilm_model: Any
) -> None:
    """The demo corpus (under 100 chunks): a search retrieves every chunk, and those the
    query does not match at all score 0; they are context, not relevant."""
    with Retriever(tmp_path / "db", embedder=CountingEmbedder(minilm_model)) as r:
        r.ingest(corpus_dir)
        assert r.count() < 100
        response = r.search_documents("install on linux", mode="semantic", limit=10)
    chunks = [c for result in response.results for c in result.chunks]
    zero = [c for c in chunks if c.score == 0]
    assert zero, "no chunk scored 0: the test shows nothing"
    assert not any(c.is_relevant for c in zero)
    assert all(c.is_relevant for c in chunks if c.score > 0)
    for result in response.results:
        assert any(c.is_relevant for c in result.chunks)


def _tiny_beir(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    docs = [
        {"_id": "d1", "title": "Penguins", "text": "Emperor penguins breed in winter."},
        {"_id": "d2", "title": "Bread", "text": "Bread rises because yeast makes gas."},
    ]
    queries = [{"_id": "q1", "text": "where do penguins breed"}, {"_id": "q2", "text": "bread"}]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs), "utf-8")
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries), "utf-8")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    return root


def test_eval_times_every_mode_with_its_own_query_embeddings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hybrid ran after semantic with every query vector already cached, so it looked
    faster than semantic. Each mode now embeds its queries, and the report says how many."""
    beir = _tiny_beir(tmp_path / "tiny")
    args = ["eval", str(beir), "--json", "--cache", str(tmp_path / "cache"), "--no-progress"]
    assert main([*args, "--mode", "semantic", "--mode", "hybrid", "--mode", "lexical"]) == 0
    modes = json.loads(capsys.readouterr().out)["modes"]
    assert modes["semantic"]["queries_embedded"] == 2
    assert modes["hybrid"]["queries_embedded"] == 2
    assert modes["lexical"]["queries_embedded"] == 0


def test_memory_search_prints_version_numbers_not_offsets(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "db")
    assert main(["memory", "add", "Dana drinks green tea", "--db", db]) == 0
    memory_id = re.search(r"added (\S+) ", capsys.readouterr().out)
    assert memory_id is not None
    assert main(["memory", "update", memory_id.group(1), "Dana drinks espresso", "--db", db]) == 0
    capsys.readouterr()
    assert main(["memory", "search", "what does Dana drink", "--related", "--db", db]) == 0
    out = capsys.readouterr().out
    assert "v2" in out and "<- updates v1: Dana drinks green tea" in out
    assert "(-1)" not in out


def test_prune_tells_files_gone_from_disk_from_files_under_a_new_prefix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("a", "b"):
        (docs / f"{name}.md").write_text(f"# {name}\n\nThe {name} text of this folder.\n")
    db = ["--db", str(tmp_path / "db"), "--no-progress"]
    assert main(["ingest", str(docs), *db]) == 0
    (docs / "b.md").unlink()
    capsys.readouterr()
    assert main(["ingest", str(docs), "--id-prefix", "docs/", "--prune", *db]) == 0
    out = capsys.readouterr().out
    assert "gone from disk: 1 document(s), deleted (--prune)\n  'b.md'\n" in out
    assert "their files are still on disk" in out and "--id-prefix" in out
    still = out.split("their files are still on disk", 1)[1]
    assert "1 document(s), deleted (--prune)\n  'a.md'\n" in still
