"""`remy tune`: fit on a train split, store the options in the collection, and later
searches (the API, `remy eval`) use them. Real MiniLM, real Chroma, real tantivy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remy_retriever import Retriever
from remy_retriever.cli import main
from remy_retriever.search.tuning import defaults

pytestmark = pytest.mark.slow

# Part codes: the lexical branch finds them exactly, MiniLM barely tells them apart.
_PARTS = [
    ("valve", "A brass valve for garden hoses"),
    ("pump", "A small pump for aquarium water"),
    ("filter", "A paper filter for coffee machines"),
    ("gasket", "A rubber gasket that seals a pipe joint"),
    ("bearing", "A steel ball bearing for bicycle wheels"),
    ("spring", "A coil spring for a door closer"),
    ("hinge", "A cabinet hinge that closes softly"),
    ("bracket", "A wall bracket that holds a shelf"),
]


def _beir(root: Path) -> Path:
    (root / "qrels").mkdir(parents=True)
    docs, queries, train, test = [], [], [], []
    for i, (name, text) in enumerate(_PARTS):
        for j in range(2):
            code = f"QX{i}{j}7{j}"
            doc = f"{name}-{j}"
            docs.append({"_id": doc, "title": f"Part {code}", "text": f"{text}, model {code}."})
            qid = f"q{i}{j}"
            queries.append({"_id": qid, "text": f"{name} part {code}"})
            (train if j == 0 else test).append(f"{qid}\t{doc}\t1")
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs), "utf-8")
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries), "utf-8")
    header = "query-id\tcorpus-id\tscore\n"
    (root / "qrels" / "train.tsv").write_text(header + "\n".join(train) + "\n", "utf-8")
    (root / "qrels" / "test.tsv").write_text(header + "\n".join(test) + "\n", "utf-8")
    return root


def test_tune_on_train_then_searches_use_the_stored_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    beir = _beir(tmp_path / "parts")
    cache = tmp_path / "cache"
    assert main(["tune", str(beir), "--cache", str(cache)]) == 2  # no eval index yet
    assert "run `remy eval" in capsys.readouterr().err
    evaluate = ["eval", str(beir), "--json", "--cache", str(cache), "--no-progress"]
    assert main([*evaluate, "--mode", "hybrid"]) == 0
    before = json.loads(capsys.readouterr().out)
    assert before["search_config"] == {}

    assert main(["tune", str(beir), "--cache", str(cache), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["stored"] is True and report["queries"] == 8
    assert report["nDCG@10"] >= report["default_nDCG@10"]
    config = report["config"]
    assert {"config": config, "nDCG@10": report["nDCG@10"]} in report["tried"]

    (store,) = cache.iterdir()
    queries = [
        json.loads(line)["text"] for line in (beir / "queries.jsonl").read_text().split("\n")
    ]
    with Retriever(store, collection="beir") as r:
        assert r.search_config == config
        for q in queries:
            assert r.rank(q) == r.rank(q, **config)
            if config != defaults():
                assert r.rank(q) != r.rank(q, **defaults())
            assert [h.id for h in r.search(q, k=3)] == [h.id for h in r.search(q, k=3, **config)]
        # A stored option set the tune did not pick: searches follow it, too.
        r.set_search_config({"fusion": "rrf", "rrf_k": 20.0})
    with Retriever(store, collection="beir") as r:
        assert r.search_config == {"fusion": "rrf", "rrf_k": 20.0}
        q = queries[0]
        assert r.rank(q) == r.rank(q, fusion="rrf", rrf_k=20.0)
        assert r.rank(q) != r.rank(q, **defaults())
        assert r.rank(q, fusion="convex") == r.rank(q, **defaults())  # keywords win

    assert main([*evaluate, "--mode", "hybrid"]) == 0
    assert json.loads(capsys.readouterr().out)["search_config"] == {"fusion": "rrf", "rrf_k": 20.0}
    assert main(["tune", str(beir), "--cache", str(cache), "--reset"]) == 0
    capsys.readouterr()
    with Retriever(store, collection="beir") as r:
        assert r.search_config == {}


def test_tune_with_query_and_qrels_files_and_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    beir = _beir(tmp_path / "parts")
    db = str(tmp_path / "db")
    with Retriever(db, collection="parts") as r:
        r.add([])
    args = ["tune", "--db", db, "--collection", "parts"]
    assert main(args) == 2
    assert "pass BEIR_DIR, or both --queries" in capsys.readouterr().err
    files = ["--queries", str(beir / "queries.jsonl"), "--qrels", str(beir / "qrels" / "test.tsv")]
    assert main([*args, *files, "--dry-run", "--json"]) == 0  # an empty collection: defaults
    report = json.loads(capsys.readouterr().out)
    assert report["stored"] is False and report["config"] == defaults()
    assert main(["tune", str(beir), "--split", "dev", "--db", db, "--collection", "parts"]) == 2
    assert "qrels/dev.tsv' is missing" in capsys.readouterr().err
