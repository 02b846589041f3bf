"""Pseudo-queries for `remy tune --synthetic` (pure: hand-made chunks and idf), and the
held-out check that refuses a fit which does not carry over to unseen pseudo-queries."""

from __future__ import annotations

import random

import pytest

from remy_retriever.errors import InvalidInputError
from remy_retriever.search.pseudo_queries import (
    MIN_TERMS,
    PseudoQuery,
    SourceChunk,
    generate,
    sample_key,
    sentences,
)
from remy_retriever.search.tuning import Collected, defaults, fit_synthetic
from remy_retriever.text.analysis import analyze

_FIRST = "Overview of the {w} project and its goals."
_BODY = (
    "The {w} turbine measured stronger airflow across the northern valley ridge. "
    "Engineers compared blade vibration with ambient temperature readings every week."
)
_SECOND = (
    "Maintenance crews replaced worn {w} bearings before the winter storms arrived. "
    "Later inspections reported quieter gearbox operation during calm evenings."
)
_WORDS = ["alder", "birch", "cedar", "dogwood", "elm", "fir", "ginkgo", "hazel"]


def _chunks(words: list[str] = _WORDS) -> list[SourceChunk]:
    out = []
    for w in words:
        doc = f"doc-{w}"
        first = _FIRST.format(w=w) + " " + _BODY.format(w=w)
        out.append(SourceChunk(f"{doc}#0", doc, first, (f"The {w} report",)))
        out.append(SourceChunk(f"{doc}#1", doc, _SECOND.format(w=w), (f"The {w} report",)))
    single = "A single-chunk note about the quartz 4711 sensor calibration on windy afternoons."
    out.append(SourceChunk("note#0", "note", "Intro line here. " + single, ("Quartz note",)))
    return out


def _idf(terms: list[str]) -> dict[str, float]:
    # Tree names and the sensor are rare (one document each); everything else common.
    rare = set(analyze(" ".join([*_WORDS, "quartz", "sensor"])))
    return {t: 5.0 if t in rare else 1.0 for t in terms}


def test_sentences_split_at_sentence_ends_and_blank_lines() -> None:
    text = "One two. Three four? Five; six\n\nSeven eight"
    assert sentences(text) == ["One two.", "Three four?", "Five;", "six", "Seven eight"]


def test_cloze_queries_come_from_multi_chunk_documents_and_exclude_their_chunk() -> None:
    chunks = _chunks()
    by_id = {c.chunk_id: c for c in chunks}
    queries = generate(chunks, _idf, limit=100)
    assert {q.document_id for q in queries} == {f"doc-{w}" for w in _WORDS}  # not "note"
    for q in queries:
        assert q.kind == "cloze" and q.query_id == f"cloze:{q.document_id}"
        (source,) = q.exclude
        assert by_id[source].document_id == q.document_id
        # A whole sentence of the excluded chunk, never a chunk's first sentence.
        assert q.text in sentences(by_id[source].text)[1:]


def test_generation_is_seeded_and_independent_of_input_order() -> None:
    chunks = _chunks()
    shuffled = chunks[:]
    random.Random(7).shuffle(shuffled)
    assert generate(chunks, _idf, seed=3) == generate(shuffled, _idf, seed=3)
    texts = {tuple(q.text for q in generate(chunks, _idf, seed=s)) for s in range(6)}
    assert len(texts) > 1  # another seed picks other sentences


def test_limit_caps_the_queries_and_a_larger_limit_extends_a_smaller_one() -> None:
    chunks = _chunks()
    three = generate(chunks, _idf, limit=3, kinds=("cloze", "title"))
    seven = generate(chunks, _idf, limit=7, kinds=("cloze", "title"))
    assert len(three) == 3 and len(seven) == 7
    assert seven[:3] == three
    documents = sorted({c.document_id for c in chunks}, key=lambda d: sample_key(0, d))
    assert [q.document_id for q in seven][:1] == documents[:1]


def test_masked_queries_drop_the_rarest_terms_numbers_and_initials() -> None:
    queries = generate(_chunks(), _idf, kinds=("masked",))
    (q,) = queries  # the one single-chunk document
    assert q.kind == "masked" and q.document_id == "note" and q.exclude == ()
    terms = analyze(q.text)
    assert "quartz" not in terms and "sensor" not in terms  # the document's fingerprint
    assert "4711" not in q.text
    assert len(set(terms)) >= MIN_TERMS
    assert set(terms) <= set(analyze("single chunk note calibration windy afternoons"))


def test_titles_are_masked_too_and_short_ones_are_skipped() -> None:
    titles = generate(_chunks(), _idf, kinds=("title",))
    assert titles == []  # "The alder report": too few content terms once masked
    long_title = ("Airflow measurements across northern valley ridges with alder turbines",)
    chunk = SourceChunk("t#0", "t", "Body text.", long_title)
    (q,) = generate([chunk], _idf, kinds=("title",))
    assert q.kind == "title" and "alder" not in analyze(q.text)


def test_unknown_kinds_are_refused_naming_the_choices() -> None:
    with pytest.raises(InvalidInputError, match="unknown pseudo-query kinds.*'cloze'"):
        generate(_chunks(), _idf, kinds=("sentence",))


def _query(qid: str, lexical_right: bool) -> Collected:
    """A pseudo-query whose target (doc ``qid``) only one branch ranks first."""
    target = f"{qid}#0"
    others = [f"{qid}-x{j}#0" for j in range(6)]
    top = [(target, 0.9)] + [(c, 0.5 - 0.01 * j) for j, c in enumerate(others)]
    low = [(c, 0.9 - 0.01 * j) for j, c in enumerate(others)] + [(target, 0.3)]
    semantic, lexical = (low, top) if lexical_right else (top, low)
    lexical = [(c, 10.0 * s) for c, s in lexical]  # BM25's own scale
    return Collected(qid, {"semantic": semantic, "lexical": lexical}, {}, ceiling=10.0)


def _Q(qid: str) -> PseudoQuery:
    return PseudoQuery(qid, f"query {qid}", qid, "cloze")


def _split(n: int) -> tuple[list[str], list[str]]:
    ids = [f"q{i}" for i in range(n)]
    order = sorted(ids, key=lambda q: sample_key(0, "held-out:" + q))
    cut = round(0.4 * n)
    return order[cut:], order[:cut]


def test_a_fit_that_carries_over_to_the_held_out_queries_is_accepted() -> None:
    ids = [f"q{i}" for i in range(40)]
    collected = [_query(q, lexical_right=True) for q in ids]
    report = fit_synthetic(collected, [_Q(q) for q in ids], baseline=defaults())
    assert report.accepted, report.reason
    assert report.held_out == 16 and report.fit.queries == 24
    assert report.held_out_score >= report.held_out_baseline + report.margin
    assert report.config != defaults()


def test_a_fit_the_held_out_queries_contradict_is_refused() -> None:
    fitted, held = _split(40)
    # The fit part says "trust lexical", the held-out part the opposite: a bad fit.
    collected = [_query(q, lexical_right=True) for q in fitted]
    collected += [_query(q, lexical_right=False) for q in held]
    queries = [_Q(c.query_id) for c in collected]
    report = fit_synthetic(collected, queries, baseline=defaults())
    assert report.fit.score > report.fit.default_score  # it looked better where it was fit
    assert not report.accepted
    assert report.held_out_score < report.held_out_baseline + report.margin
    assert "below the margin" in report.reason and "nothing is stored" in report.reason
    assert report.to_dict()["accepted"] is False


def test_too_few_pseudo_queries_are_refused() -> None:
    collected = [_query(f"q{i}", lexical_right=True) for i in range(12)]
    with pytest.raises(InvalidInputError, match="only 12 pseudo-queries"):
        fit_synthetic(collected, [_Q(c.query_id) for c in collected], baseline=defaults())
