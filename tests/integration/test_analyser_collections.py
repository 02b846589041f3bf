"""On each judged collection of ``benchmarks/data/analysers/``, lexical search through the
real lexical index (tantivy) ranks better with the language's analyser than with
``"english"``, and the collections are well formed: every judgment names a document and a
query of its collection, and every query has one to three relevant documents."""

from __future__ import annotations

import json

import pytest

from benchmarks import analysers
from remy_retriever.evaluation.beir import load_beir
from remy_retriever.text.analyzers import ANALYZER_NAMES

COLLECTIONS = analysers.collections()
JUDGED = analysers.judged()
#: The least nDCG@10 the right analyser must reach on any collection.
FLOOR = 0.5


def test_every_language_analyser_is_judged_on_a_collection() -> None:
    """Every analyser but english, code and simple; cjk on Chinese, Japanese and Korean."""
    judged = {analyser for _, _, analyser in JUDGED}
    assert judged == set(ANALYZER_NAMES) - {"english", "code", "simple"}
    assert {n for n, a in COLLECTIONS.items() if a == "cjk"} == {"chinese", "japanese", "korean"}


@pytest.mark.parametrize("name", sorted(COLLECTIONS))
def test_the_collection_is_well_formed(name: str) -> None:
    folder = analysers.DATA_DIR / name
    corpus = [json.loads(line) for line in (folder / "corpus.jsonl").open(encoding="utf-8")]
    queries = [json.loads(line) for line in (folder / "queries.jsonl").open(encoding="utf-8")]
    dataset = load_beir(folder)
    assert len(dataset.corpus) == len(corpus) >= 40
    assert len(dataset.queries) == len(queries) >= 15
    assert (folder / "PROVENANCE.md").is_file()
    for qid, judged in dataset.qrels.items():
        assert qid in dataset.queries
        assert 1 <= len(judged) <= 3
        assert set(judged) <= set(dataset.corpus)


@pytest.mark.parametrize(("label", "name", "analyser"), JUDGED, ids=[j[0] for j in JUDGED])
def test_the_languages_analyser_beats_english_on_its_collection(
    label: str, name: str, analyser: str
) -> None:
    dataset = load_beir(analysers.DATA_DIR / name)
    right, _ = analysers.ndcg10(dataset, analyser)
    english, _ = analysers.ndcg10(dataset, "english")
    assert right >= FLOOR, f"{label}: nDCG@10 {right:.4f} with {analyser!r}"
    assert right > english, f"{label}: {right:.4f} with {analyser!r}, {english:.4f} english"


def test_the_comparison_can_fail() -> None:
    """English against itself does not beat itself, and a wrong language ranks worse."""
    dataset = load_beir(analysers.DATA_DIR / "russian")
    english, _ = analysers.ndcg10(dataset, "english")
    assert not english > analysers.ndcg10(dataset, "english")[0]
    assert analysers.ndcg10(dataset, "german")[0] < analysers.ndcg10(dataset, "russian")[0]
