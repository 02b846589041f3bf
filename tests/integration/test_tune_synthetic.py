"""`remy tune --synthetic` on a small real store (real MiniLM, real Chroma, real tantivy):
it builds pseudo-queries from the collection, reports, and stores only an accepted fit;
plus `remy tune`'s newcomer fixes (a missing split names the flag, `--reset` needs no
judgements)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from remy_retriever import Document, Retriever
from remy_retriever.cli import main

pytestmark = pytest.mark.slow

_PLACES = [
    "harbour", "orchard", "quarry", "glacier", "meadow", "canyon", "lagoon", "prairie",
    "summit", "delta", "marsh", "tundra", "plateau", "estuary", "savanna", "fjord",
    "oasis", "volcano", "reef", "steppe", "bayou", "moor", "atoll", "gorge",
    "basin", "cove", "dune", "glen", "heath", "isthmus", "knoll", "mesa",
    "ridge", "shoal", "vale", "wetland",
]  # fmt: skip


def _documents() -> list[Document]:
    docs = []
    for i, place in enumerate(_PLACES):
        text = (
            f"# Survey of the {place}\n\n"
            f"Field teams mapped the {place} during the spring season of year {2000 + i}. "
            f"They recorded rainfall, soil depth and the birds nesting near the {place}.\n\n"
            f"# Findings at the {place}\n\n"
            f"The final report on the {place} describes how rainfall shaped the soil. "
            f"Nesting birds returned to the {place} once the water level settled again."
        )
        docs.append(Document(id=f"site-{place}", text=text, title=f"The {place} survey"))
    return docs


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    db = str(tmp_path_factory.mktemp("synthetic") / "db")
    with Retriever(db, collection="sites") as r:
        r.add(_documents())
        assert r.count() == 2 * len(_PLACES)  # two sections, two chunks each
    return db


def test_synthetic_dry_run_reports_and_stores_nothing(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["tune", "--synthetic", "--db", store, "--collection", "sites", "--json"]
    assert main([*args, "--dry-run", "--no-progress"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["synthetic"] is True and report["stored"] is False
    assert report["kinds"] == {"cloze": len(_PLACES)}  # one per two-chunk document
    counts = report["pseudo_queries"]
    assert counts["fit"] + counts["held_out"] == len(_PLACES) and counts["held_out"] >= 10
    assert 0.0 <= report["held_out_nDCG@10"]["baseline"] <= 1.0
    assert set(report["config"]) >= {"fusion"}
    with Retriever(store, collection="sites") as r:
        assert r.search_config == {}
    # Seeded: the same run gives the same report.
    assert main([*args, "--dry-run", "--seed", "0"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again == report


def test_synthetic_refuses_a_fit_below_the_margin_and_stores_nothing(
    store: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["tune", "--synthetic", "--db", store, "--collection", "sites"]
    # No fit gains 0.99 nDCG@10 on held-out queries: refused, even without --dry-run.
    assert main([*args, "--margin", "0.99", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["accepted"] is False and report["stored"] is False
    assert "nothing" in report["reason"]
    with Retriever(store, collection="sites") as r:
        assert r.search_config == {}
    assert main([*args, "--margin", "0.99"]) == 0
    out = capsys.readouterr().out
    assert "held-out nDCG@10" in out and "stored in the collection" not in out


def test_synthetic_bad_settings_and_too_small_collections_fail_clearly(
    store: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["tune", "--synthetic", "--db", store, "--collection", "sites", "--dry-run"]
    assert main([*args, "--pseudo-queries", "5"]) == 2
    assert "queries=5: pass a whole number of pseudo-queries from 30" in capsys.readouterr().err
    assert main([*args, "--margin", "-1"]) == 2
    assert "margin=-1.0" in capsys.readouterr().err
    assert main([*args, "--queries", "q.jsonl"]) == 2
    assert "drop --queries/--qrels" in capsys.readouterr().err
    small = str(tmp_path / "small")
    with Retriever(small, collection="few") as r:
        r.add(_documents()[:5])
    assert main(["tune", "--synthetic", "--db", small, "--collection", "few"]) == 2
    assert "only 5 pseudo-queries" in capsys.readouterr().err


def test_tune_without_train_split_suggests_the_flag_and_reset_needs_no_judgements(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    beir = tmp_path / "one-split"
    (beir / "qrels").mkdir(parents=True)
    corpus = [
        {"_id": f"d{i}", "title": "", "text": f"A note about {p}."}
        for i, p in enumerate(_PLACES[:4])
    ]
    (beir / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in corpus), "utf-8")
    (beir / "queries.jsonl").write_text(json.dumps({"_id": "q0", "text": "harbour"}), "utf-8")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq0\td0\t1\n", "utf-8")
    cache = str(tmp_path / "cache")
    assert main(["tune", str(beir), "--cache", cache]) == 2
    err = capsys.readouterr().err
    assert "train.tsv' is missing" in err and "--split test" in err and "--synthetic" in err
    assert main(["eval", str(beir), "--cache", cache, "--mode", "lexical", "--json"]) == 0
    capsys.readouterr()
    assert main(["tune", str(beir), "--cache", cache, "--split", "test", "--dry-run"]) == 0
    assert "1 judged queries" in capsys.readouterr().out
    # --reset clears the stored options without asking for judgements (no train split).
    assert main(["tune", str(beir), "--cache", cache, "--reset"]) == 0
    assert "search config cleared" in capsys.readouterr().out
