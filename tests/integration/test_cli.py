"""The `remy` command line, run in-process against a real store and the real model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remy_retriever.cli import main


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory, corpus_dir: Path) -> str:
    path = str(tmp_path_factory.mktemp("cli") / "db")
    assert main(["ingest", str(corpus_dir), "--db", path, "--no-progress"]) == 0
    return path


def test_ingest_is_idempotent(
    db: str, corpus_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert main(["ingest", str(corpus_dir), "--db", db, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "added 0, updated 0, unchanged 6 documents; 0 chunks written" in out


def test_search_human_output(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "install remy on linux with apt", "--db", db, "--highlight"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("[1] score=")
    assert "install.md" in out and "Install on Linux" in out
    assert "[apt]" in out  # highlighted match


def test_search_json_wire_names(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["search", "reciprocal rank fusion", "--db", db, "--json", "--k", "3", "--explain"]
    assert main(args) == 0
    hits = json.loads(capsys.readouterr().out)
    assert len(hits) == 3
    assert {"id", "score", "text", "citation", "explain"} <= set(hits[0])
    assert {"documentId", "chunkIndex", "headingPath"} <= set(hits[0]["citation"])
    assert "retrievalRank" not in hits[0]


def test_search_rerank_shows_rank_jump(
    db: str, cross_encoder_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["search", "install", "--db", db, "--rerank", cross_encoder_path, "--json"]
    assert main(args) == 0
    hits = json.loads(capsys.readouterr().out)
    assert all(0 <= h["score"] <= 1 and h["retrievalRank"] >= 1 for h in hits)
    assert main(["search", "install", "--db", db, "--rerank", cross_encoder_path]) == 0
    assert "(retrieval rank " in capsys.readouterr().out


def test_search_errors_exit_2(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "install", "--db", db, "--where", "{tenant: a}"]) == 2
    assert "--where is not valid JSON" in capsys.readouterr().err
    assert main(["search", "   ", "--db", db]) == 2
    assert "empty or whitespace" in capsys.readouterr().err
    assert main(["search", "x", "--db", db, "--collection", "missing-one"]) == 2
    assert "no collection 'missing-one' in the remy store" in capsys.readouterr().err


def _tiny_beir(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    docs = [
        {
            "_id": "d1",
            "title": "Penguins",
            "text": "Emperor penguins breed in the Antarctic winter.",
        },
        {"_id": "d2", "title": "Volcanoes", "text": "Lava flows from erupting volcanoes."},
        {"_id": "d3", "title": "", "text": "Bread rises because yeast produces carbon dioxide."},
        {"_id": "d4", "title": "Empty", "text": ""},
        {"_id": "d5", "title": "", "text": ""},
    ]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs), encoding="utf-8")
    queries = [
        {"_id": "q1", "text": "where do penguins breed"},
        {"_id": "q2", "text": "why does bread rise"},
        {"_id": "q3", "text": "unjudged query"},
    ]
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries), "utf-8")
    (root / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td3\t1\n", encoding="utf-8"
    )
    return root


def test_eval_json_and_cache(
    tmp_path: Path, cross_encoder_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    beir = _tiny_beir(tmp_path / "tiny")
    cache = tmp_path / "cache"
    args = ["eval", str(beir), "--json", "--cache", str(cache), "--no-progress"]
    assert main(args) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["dataset"] == "tiny" and first["queries"] == 2
    assert set(first["modes"]) == {"lexical", "semantic", "hybrid"}
    for row in first["modes"].values():
        assert row["nDCG@10"] == pytest.approx(1.0)
        assert {"R@100", "p50_ms", "p95_ms"} <= set(row)
    assert first["chunks_embedded"] == 4  # d5 (empty) is skipped
    assert main([*args, "--mode", "hybrid", "--rerank", cross_encoder_path]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["chunks_embedded"] == 0  # the cached index is reused
    assert set(second["modes"]) == {"hybrid", "hybrid+rerank"}
    assert 0 < second["modes"]["hybrid+rerank"]["R@100"] <= 1


def test_eval_human_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    beir = _tiny_beir(tmp_path / "tiny2")
    args = ["eval", str(beir), "--mode", "lexical", "--cache", str(tmp_path / "c"), "--no-progress"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "nDCG@10" in out and "lexical" in out
    assert main(["eval", str(tmp_path / "nowhere")]) == 2
    assert "corpus.jsonl' is missing" in capsys.readouterr().err
