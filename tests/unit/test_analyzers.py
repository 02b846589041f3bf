"""Each collection analyser on real sentences: its terms, and spans that point at the very
surface text they came from (what highlighting shows), in every script."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import Stemmer
from hypothesis import given
from hypothesis import strategies as st

from remy_retriever.errors import InvalidInputError
from remy_retriever.search.enrich import highlight, matched_terms
from remy_retriever.text.analysis import analyze, analyze_query, analyze_spans
from remy_retriever.text.analyzers import ANALYZER_NAMES, ENGLISH, Analyzer, get_analyzer

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "analysers" / "english_golden.json"


def pairs(analyzer: Analyzer, text: str) -> list[tuple[str, str]]:
    """(term, the surface text its span covers)."""
    return [(s.term, text[s.start : s.end]) for s in analyzer.spans(text)]


def test_german_stems_umlaut_plurals_and_drops_german_stopwords() -> None:
    german = get_analyzer("german")
    text = "Die Häuser wurden gebaut und die Kinder spielten im Haus."
    got = pairs(german, text)
    assert ("haus", "Häuser") in got and ("haus", "Haus") in got
    assert ("kind", "Kinder") in got
    assert all(surface.lower() not in {"die", "und", "im"} for _, surface in got)
    # English keeps the German function words and stems the plural apart.
    english = [t for t, _ in pairs(ENGLISH, text)]
    assert "die" in english and "und" in english and "häuser" in english


def test_german_compound_is_one_term_and_matches_its_own_inflections() -> None:
    german = get_analyzer("german")
    text = "Der Kinderspielplatz neben den Kinderspielplätzen wird erneuert."
    terms = german.terms(text)
    assert terms.count(german.terms("Kinderspielplatz")[0]) == 2
    assert german.query_terms("Kinderspielplätze") == german.terms("Kinderspielplatz")


def test_french_elision_cuts_the_article_and_keeps_the_offsets_on_the_noun() -> None:
    french = get_analyzer("french")
    text = "L'homme d'affaires qu'il connaît vend l’huile."
    got = pairs(french, text)
    assert ("homm", "homme") in got
    assert ("affair", "affaires") in got
    assert ("huil", "huile") in got
    assert french.terms("l'homme") == french.terms("homme") == french.terms("hommes")
    # The english analyser leaves the article glued on.
    assert ENGLISH.terms("l'homme") == ["lhomm"]


def test_spanish_stems_and_drops_spanish_stopwords() -> None:
    spanish = get_analyzer("spanish")
    text = "Los niños corrían por las calles de la ciudad."
    terms = spanish.terms(text)
    assert "los" not in terms and "las" not in terms and "de" not in terms
    assert spanish.terms("niño") == spanish.terms("niños")
    assert spanish.terms("calle") == spanish.terms("calles")


def test_chinese_sentence_is_indexed_as_bigrams_so_an_inner_word_matches() -> None:
    cjk = get_analyzer("cjk")
    text = "机器学习是人工智能的一个分支"
    assert ENGLISH.terms(text) == [text]  # one opaque term: 学习 could never match
    terms = cjk.terms(text)
    assert terms[:3] == ["机器", "器学", "学习"] and len(terms) == len(text) - 1
    assert set(cjk.query_terms("学习")) <= set(terms)
    assert [m.token for m in highlight(text, ["学习"], cjk)] == ["学习"]
    assert matched_terms("学习", text, cjk) == (("学习", "学习"),)


def test_japanese_mixed_with_latin_words() -> None:
    cjk = get_analyzer("cjk")
    text = "東京で機械学習を勉強しています。Python と TensorFlow を使う。"
    got = pairs(cjk, text)
    assert ("機械", "機械") in got and ("学習", "学習") in got
    assert ("python", "Python") in got and ("tensorflow", "TensorFlow") in got
    assert ("と", "と") in got  # a lone kana between spaces stays a unigram
    assert "学習" in cjk.query_terms("機械学習")


def test_korean_hangul_runs_are_bigrams() -> None:
    cjk = get_analyzer("cjk")
    assert cjk.terms("한국어 검색") == ["한국", "국어", "검색"]


def test_python_and_java_identifiers_split_and_keep_the_whole() -> None:
    code = get_analyzer("code")
    assert code.terms("getUserName") == ["getusername", "get", "user", "name"]
    assert code.terms("get_user_name") == ["get_user_name", "get", "user", "name"]
    assert code.terms("HTTPServer") == ["httpserver", "http", "server"]
    assert code.terms("java.util.HashMap") == ["java.util.hashmap", "java", "util", "hash", "map"]
    assert code.terms("os.path.join") == ["os.path.join", "os", "path", "join"]
    assert "remy_retriever/text/analysis.py" in code.terms("see remy_retriever/text/analysis.py")
    assert code.terms("installing") == ["installing"]  # no stemming
    # English splits snake_case but glues and stems camelCase.
    assert ENGLISH.terms("getUserName") == ["getusernam"]


def test_words_with_vowel_signs_and_points_stay_whole_in_every_script() -> None:
    """Devanagari and Tamil vowel signs, Hebrew points and Arabic harakat are combining
    marks: a word keeps them, so the stemmer sees the whole word and the span covers it."""
    hindi = pairs(get_analyzer("hindi"), "नर्सें वेतन माँग रही हैं")
    assert [surface for _, surface in hindi][:2] == ["नर्सें", "वेतन"]
    assert get_analyzer("hindi").terms("नर्सें") == get_analyzer("hindi").terms("नर्सों")
    tamil = pairs(get_analyzer("tamil"), "மாணவர்கள் தேர்வு எழுதினார்கள்")
    assert [surface for _, surface in tamil] == ["மாணவர்கள்", "தேர்வு", "எழுதினார்கள்"]
    assert [s for _, s in pairs(get_analyzer("yiddish"), "אַ שיין הויז")][-1] == "הויז"
    assert [s for _, s in pairs(get_analyzer("simple"), "פֿאַרשטיין")] == ["פֿאַרשטיין"]
    assert [s for _, s in pairs(get_analyzer("arabic"), "كَتَبَ الوَلَدُ")] == ["كَتَبَ", "الوَلَدُ"]


def test_analysers_whose_terms_changed_carry_a_newer_version_and_english_stays_at_one() -> None:
    """Keeping combining marks inside a word changed the terms of the language analysers,
    cjk and simple (version 2); not using one-letter stems changed the language analysers
    again (version 3); english and code give the terms they always gave."""
    versions = {name: get_analyzer(name).version for name in ANALYZER_NAMES}
    assert versions.pop("english") == 1
    assert versions.pop("code") == 1
    assert versions.pop("cjk") == versions.pop("simple") == 2
    assert set(versions.values()) == {3}
    assert "hindi" in versions and "tamil" in versions and "dutch_porter" in versions


def test_a_stem_of_one_letter_is_not_used_and_the_word_stays_whole() -> None:
    """Snowball Tamil takes both நாவல் (novel) and நாற்பது (forty) to நா (one letter: a
    consonant and its vowel sign): each stays whole, so they no longer match each other,
    and நீச்சலில் (in swimming), stemmed to நீச்சல், now matches நீச்சல் (swimming),
    which Snowball took to நீ. Longer stems are Snowball's own."""
    tamil = get_analyzer("tamil")
    assert Stemmer.Stemmer("tamil").stemWords(["நாவல்", "நாற்பது"]) == ["நா", "நா"]
    assert tamil.terms("நாவல் நாற்பது") == ["நாவல்", "நாற்பது"]
    assert tamil.terms("நீச்சலில்") == tamil.terms("நீச்சல்") == ["நீச்சல்"]
    assert [(s.term, s.start, s.end) for s in tamil.spans("ஒரு நாவல்")] == [("நாவல்", 4, 9)]
    turkish = get_analyzer("turkish")
    assert Stemmer.Stemmer("turkish").stemWord("önce") == "ö"
    assert turkish.terms("önce kitaplar") == ["önce", "kitap"]
    assert get_analyzer("french").terms("loyers") == ["loyer"]  # three letters: Snowball's


def test_simple_lowercases_and_splits_only() -> None:
    simple = get_analyzer("simple")
    assert simple.terms("The Installing of THE things") == [
        "the",
        "installing",
        "of",
        "the",
        "things",
    ]


SENTENCES = [
    ("german", "Die Häuser wurden gebaut; Straße und Fußgängerübergänge."),
    ("french", "L'homme d'affaires qu'il connaît vend l’huile d'olive."),
    ("spanish", "Los niños corrían por las calles de la ciudad."),
    ("cjk", "机器学习是人工智能的一个分支 and Deep-Learning 東京で機械学習 한국어"),
    ("code", "def getUserName(self): return self.user_name  # java.util.HashMap<K,V>"),
    ("simple", "Ünïcödé e\u0301te\u0301 words"),
    ("english", "Installing 日本語 Café crème brûlée"),
]


@pytest.mark.parametrize(("name", "text"), SENTENCES, ids=[n for n, _ in SENTENCES])
def test_every_span_covers_text_that_analyses_to_its_term(name: str, text: str) -> None:
    analyzer = get_analyzer(name)
    spans = analyzer.spans(text)
    assert spans
    for span in spans:
        assert 0 <= span.start < span.end <= len(text)
        assert span.term in analyzer.terms(text[span.start : span.end])
    assert analyzer.terms(text) == [s.term for s in spans]
    # Highlighting a term lands exactly on its surface forms.
    for match in highlight(text, [spans[-1].term], analyzer):
        assert text[match.start : match.end] == match.token


@pytest.mark.parametrize("name", ["german", "cjk", "code", "simple"])
@given(st.text(max_size=120))
def test_spans_stay_inside_any_text(name: str, text: str) -> None:
    for span in get_analyzer(name).spans(text):
        assert 0 <= span.start < span.end <= len(text)
        assert " " not in span.term and span.term


@pytest.mark.parametrize(
    "name", ["french", "italian", "german", "hindi", "arabic", "cjk", "simple"]
)
@given(
    st.lists(
        st.sampled_from(
            [
                "l'homme",
                "dell'arte",
                "Häuser",
                "die",
                "नर्सें",
                "كَتَبَ",
                "’",
                "x",
                "机器学习",
                "東",
                "한국어",
            ]
        )
        | st.text(max_size=12),
        max_size=12,
    )
)
def test_the_indexing_path_gives_the_terms_of_the_spans(name: str, words: list[str]) -> None:
    """A language, CJK or simple analyser's terms without offsets (what indexing uses) are its
    spans' terms, in order, on any text, and again once memoised."""
    analyzer = get_analyzer(name)
    text = " ".join(words)
    assert analyzer.terms(text) == [s.term for s in analyzer.spans(text)]
    assert analyzer.terms(text) == [s.term for s in analyzer.spans(text)]


def test_every_snowball_language_analyses() -> None:
    for name in ANALYZER_NAMES:
        assert get_analyzer(name).name == name
        assert isinstance(get_analyzer(name).terms("Hello wonderful world 42"), list)


def test_an_unknown_analyser_names_the_choices() -> None:
    with pytest.raises(InvalidInputError, match="german.*cjk"):
        get_analyzer("klingon")


def test_english_terms_are_identical_to_the_analyser_before_collections_chose() -> None:
    """Golden terms and spans recorded from the english analyser before analysers were
    per collection, on BEIR corpus samples: English stores index and query the same."""
    cases = json.loads(GOLDEN.read_text(encoding="utf-8"))["cases"]
    assert len(cases) >= 15
    for case in cases:
        text = case["text"]
        assert analyze(text) == case["analyze"] == ENGLISH.terms(text)
        assert [[s.term, s.start, s.end] for s in analyze_spans(text)] == case["spans"]
        assert [[s.term, s.start, s.end] for s in ENGLISH.spans(text)] == case["spans"]
        assert analyze_query(text) == case["query"] == ENGLISH.query_terms(text)
