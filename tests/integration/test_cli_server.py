"""``--server HOST:PORT`` and ``--lexical-path`` on the store commands, against a real
`chroma run` (the chroma_server fixture)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from remy_retriever.cli import main

pytestmark = [pytest.mark.server, pytest.mark.timeout(300)]


def test_ingest_search_doctor_through_a_server(
    chroma_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "kiwi.md").write_text("# Kiwi\n\nThe kiwi is a flightless bird of New Zealand.")
    server = f"{chroma_server.host}:{chroma_server.port}"
    lexical = tmp_path / "lex"
    flags = ["--server", server, "--lexical-path", str(lexical), "--collection", "cli-server"]
    assert main(["ingest", str(docs), *flags, "--no-progress"]) == 0
    assert "added 1," in capsys.readouterr().out
    assert lexical.is_dir() and any(lexical.iterdir())  # the BM25 index went there
    for mode in ("lexical", "hybrid"):
        assert main(["search", "flightless kiwi", *flags, "--mode", mode, "--json"]) == 0
        hits = json.loads(capsys.readouterr().out)
        assert hits[0]["citation"]["documentId"] == "kiwi.md", mode
    assert main(["doctor", *flags, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    # Reading creates nothing on the server either.
    assert main(["search", "kiwi", "--server", server, "--collection", "nope-none"]) == 2
    assert "no collection 'nope-none'" in capsys.readouterr().err


def test_bad_server_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "x", "--server", "localhost:notaport"]) == 2
    assert "--server 'localhost:notaport' is not HOST:PORT" in capsys.readouterr().err
    assert main(["search", "x", "--server", "localhost:1", "--db", str(tmp_path)]) == 2
    assert "not both" in capsys.readouterr().err


def test_eval_through_a_server(
    chroma_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text('{"_id": "d1", "title": "P", "text": "penguins breed"}\n')
    (beir / "queries.jsonl").write_text('{"_id": "q1", "text": "where do penguins breed"}\n')
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    server = f"{chroma_server.host}:{chroma_server.port}"
    args = ["eval", str(beir), "--server", server, "--lexical-path", str(tmp_path / "lex")]
    assert main([*args, "--json", "--no-progress", "--cache", str(tmp_path / "c")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["chunks_embedded"] == 1 and report["modes"]["lexical"]["nDCG@10"] == 1.0
    assert not (tmp_path / "c").exists()  # the index lives on the server
