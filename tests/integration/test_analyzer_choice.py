"""A collection's lexical analyser is recorded in it: reopening follows the record,
another analyser is refused until the index is re-analysed, stores from before the
choice existed open as English without a rebuild, and a lexical index built with another
analyser than the record says, or an older version of it, is rebuilt on open."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import chromadb
import pytest

from remy_retriever import Document, Retriever
from remy_retriever.errors import InvalidInputError
from remy_retriever.schema.records import ANALYZER_KEY
from remy_retriever.text import analysis, analyzers

DOCS = [
    Document(id="bau", text="Die Häuser wurden im letzten Jahr am Stadtrand gebaut."),
    Document(id="garten", text="Die Kinder spielen jeden Nachmittag im Garten."),
    Document(id="zug", text="Der Zug nach Berlin fährt um acht Uhr ab."),
]


def lexical_ids(retriever: Retriever, query: str) -> list[str]:
    return [h.citation.document_id for h in retriever.search(query, mode="lexical", k=3)]


def sidecar(path: Path, collection: str) -> Path:
    return path / "remy_lexical" / collection / "analyzer.json"


def test_the_recorded_analyser_survives_reopen_and_another_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with Retriever(path, collection="dedocs", analyzer="german", progress=False) as r:
        r.add(DOCS)
        assert lexical_ids(r, "Haus") == ["bau"]  # "Häuser" and "Haus" share a stem
    with Retriever(path, collection="dedocs") as r:  # no analyzer: the recorded one
        assert lexical_ids(r, "Haus") == ["bau"]
        hit = r.search("Haus", mode="lexical", k=1, highlight=True, explain=True)[0]
        assert [m.token for m in hit.matches or ()] == ["Häuser"]
        assert hit.explain is not None and hit.explain.matched_terms == ("Haus",)
    with pytest.raises(InvalidInputError, match=r"'german'.*reanalyze=True"):
        Retriever(path, collection="dedocs", analyzer="english")
    with Retriever(path, collection="dedocs", analyzer="english", reanalyze=True) as r:
        assert lexical_ids(r, "Haus") == []  # English does not stem Häuser to haus
        assert lexical_ids(r, "Häuser") == ["bau"]
    with Retriever(path, collection="dedocs") as r:
        assert lexical_ids(r, "Haus") == []


def test_an_unknown_analyser_is_refused_before_anything_is_created(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="klingon.*german"):
        Retriever(tmp_path / "db", collection="docs", analyzer="klingon")
    assert not (tmp_path / "db").exists()


def test_a_store_from_before_the_choice_opens_as_english_without_a_rebuild(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "db"
    english = [Document(id="guide", text="Installing the package on Linux")]
    with Retriever(path, collection="docs", progress=False) as r:
        r.add(english)
        before = r.search("installation linux", mode="lexical", k=1)
    # English, like every store made before analysers were recorded, writes no record.
    assert not sidecar(path, "docs").exists()
    with caplog.at_level(logging.INFO), Retriever(path, collection="docs") as r:
        assert r.search("installation linux", mode="lexical", k=1) == before
    assert "re-indexing" not in caplog.text
    with Retriever(path, collection="docs", analyzer="english") as r:
        assert r.search("installation linux", mode="lexical", k=1) == before


def test_a_lexical_index_built_with_another_analyser_is_rebuilt(tmp_path: Path) -> None:
    """As another client of a Chroma server finds its own index after a re-analysis
    recorded German in the collection: its English terms are replaced on open."""
    path = tmp_path / "db"
    with Retriever(path, collection="dedocs", progress=False) as r:
        r.add(DOCS)
        assert lexical_ids(r, "Haus") == []
    client = chromadb.PersistentClient(path=str(path))
    collection = client.get_collection("dedocs")
    collection.modify(metadata={**(collection.metadata or {}), ANALYZER_KEY: "german"})
    del collection, client
    mark = sidecar(path, "dedocs")
    assert not mark.exists()  # built with English
    with Retriever(path, collection="dedocs") as r:
        assert lexical_ids(r, "Haus") == ["bau"]
    assert json.loads(mark.read_text(encoding="utf-8")) == {"analyzer": "german", "version": 3}


HINDI = [
    Document(id="nurses", text="अस्पताल की नर्सें वेतन की माँग कर रही हैं"),
    Document(id="train", text="दिल्ली से मुंबई की रेलगाड़ी सुबह चलती है"),
]


def test_an_index_from_an_older_version_of_its_analyser_is_rebuilt_on_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A Hindi index built before words kept their vowel signs holds consonant pieces;
    queries now get whole words. Its sidecar names no version (version 1), so the first
    open with the current version re-analyses it, and the same words then match."""
    path = tmp_path / "db"
    with monkeypatch.context() as old:  # version 1: the word split cut at combining marks
        old.setattr(analyzers, "_script_word", lambda: analysis._WORD)
        with Retriever(path, collection="hidocs", analyzer="hindi", progress=False) as r:
            r.add(HINDI)
    mark = sidecar(path, "hidocs")
    # Marked as the current version, the stale index stays: "नर्सें" is in pieces there.
    mark.write_text(json.dumps({"analyzer": "hindi", "version": 3}), encoding="utf-8")
    with Retriever(path, collection="hidocs") as r:
        assert lexical_ids(r, "नर्सों") == []
    mark.write_text(json.dumps({"analyzer": "hindi"}), encoding="utf-8")  # as version 1 wrote it
    with caplog.at_level(logging.INFO), Retriever(path, collection="hidocs") as r:
        assert lexical_ids(r, "नर्सों") == ["nurses"]  # the plural's oblique form, same stem
    assert "'hindi' analyser (version 3; the index was built with 'hindi' version 1)" in caplog.text
    assert json.loads(mark.read_text(encoding="utf-8")) == {"analyzer": "hindi", "version": 3}
    caplog.clear()
    with caplog.at_level(logging.INFO), Retriever(path, collection="hidocs") as r:
        assert lexical_ids(r, "नर्सों") == ["nurses"]
    assert "re-indexing" not in caplog.text  # rebuilt once


def test_an_english_sidecar_without_a_version_opens_without_a_rebuild_or_a_write(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """English's terms never changed: the sidecar a re-analysis to English wrote before
    analysers had versions is version 1, which English still is."""
    path = tmp_path / "db"
    with Retriever(path, collection="dedocs", analyzer="german", progress=False) as r:
        r.add(DOCS)
    with Retriever(path, collection="dedocs", analyzer="english", reanalyze=True) as r:
        before = r.search("Häuser gebaut", mode="lexical", k=3)
    mark = sidecar(path, "dedocs")
    mark.write_text(json.dumps({"analyzer": "english"}), encoding="utf-8")
    stamp = mark.stat().st_mtime_ns
    with caplog.at_level(logging.INFO), Retriever(path, collection="dedocs") as r:
        assert r.search("Häuser gebaut", mode="lexical", k=3) == before
    assert "re-indexing" not in caplog.text
    assert mark.stat().st_mtime_ns == stamp
    assert json.loads(mark.read_text(encoding="utf-8")) == {"analyzer": "english"}
