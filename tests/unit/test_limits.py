"""Metadata limits, non-finite search options, reranker output,
deep values in error messages, and the exact 64-bit int range."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pytest

from remy_retriever import Document, InvalidDocumentError, InvalidInputError, SearchOptions
from remy_retriever.memory.checks import (
    MAX_LINKED_DOCUMENTS,
    MAX_MEMORY_METADATA_BYTES,
    MAX_MEMORY_METADATA_KEYS,
    check_document_ids,
    check_metadata,
)
from remy_retriever.memory.model import PARENT_KEYS
from remy_retriever.schema.document import (
    MAX_METADATA_BYTES,
    MAX_METADATA_KEY_CHARS,
    MAX_METADATA_KEYS,
    MAX_METADATA_VALUE_BYTES,
    metadata_limit_error,
)
from remy_retriever.schema.records import RECORD_OVERHEAD_KEYS, LexicalRecord
from remy_retriever.schema.validation import as_list, check_storable
from remy_retriever.search.rerank import rerank
from remy_retriever.util.reprs import short_repr

#: Measured with chromadb 1.5.9 (embedded): one record of 5,461 metadata keys is stored,
#: 5,462 fails in log compaction and leaves the store unopenable (SQLite's 32,766
#: variables / 6 per key).
CHROMA_MAX_KEYS_PER_RECORD = 5461


def _deep_list(levels: int) -> list[Any]:
    value: list[Any] = [1]
    for _ in range(levels):
        value = [value]
    return value


# -- metadata limits ----------------------------------------------------------------------


def test_the_limits_leave_a_wide_margin_below_what_breaks_chroma() -> None:
    memory_keys = len(PARENT_KEYS) + 10  # memory_* bookkeeping (see memory/model.py)
    assert MAX_METADATA_KEYS + RECORD_OVERHEAD_KEYS <= CHROMA_MAX_KEYS_PER_RECORD // 16
    assert MAX_MEMORY_METADATA_KEYS + memory_keys <= MAX_METADATA_KEYS
    assert MAX_MEMORY_METADATA_BYTES < MAX_METADATA_BYTES
    assert MAX_METADATA_VALUE_BYTES < MAX_METADATA_BYTES


def test_metadata_exactly_at_each_limit_is_accepted() -> None:
    Document(id="a", text="x", metadata={f"k{i}": "v" for i in range(MAX_METADATA_KEYS)})
    Document(id="a", text="x", metadata={"k" * MAX_METADATA_KEY_CHARS: 1})
    Document(id="a", text="x", metadata={"k": "x" * MAX_METADATA_VALUE_BYTES})
    Document(id="a", text="x", metadata={"k": "é" * (MAX_METADATA_VALUE_BYTES // 2)})
    Document(id="a", text="x", title="t" * MAX_METADATA_VALUE_BYTES)
    full = {f"k{i}": "x" * (MAX_METADATA_VALUE_BYTES - 2) for i in range(4)}
    assert metadata_limit_error(full) is None  # 4 * (2 + 65,534) = 262,144


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"metadata": {f"k{i}": "v" for i in range(MAX_METADATA_KEYS + 1)}}, "257 keys"),
        ({"metadata": {"k" * (MAX_METADATA_KEY_CHARS + 1): 1}}, "257 characters"),
        ({"metadata": {"k": "x" * (MAX_METADATA_VALUE_BYTES + 1)}}, r"metadata\['k'\] is 65,537"),
        ({"metadata": {"k": "é" * (MAX_METADATA_VALUE_BYTES // 2 + 1)}}, "65,538 bytes"),
        ({"summary": "s" * (MAX_METADATA_VALUE_BYTES + 1)}, "summary is 65,537 bytes"),
        ({"url": "u" * 10_000_000}, "url is 10,000,000 bytes"),
        (
            {"metadata": {f"k{i}": "x" * (MAX_METADATA_VALUE_BYTES - 2) for i in range(4)}},
            None,
        ),
        (
            {
                "metadata": {f"k{i}": "x" * (MAX_METADATA_VALUE_BYTES - 2) for i in range(4)},
                "title": "t",
            },
            "totals 262,145 bytes",
        ),
    ],
)
def test_metadata_over_each_limit_is_rejected_naming_it(
    kwargs: dict[str, Any], match: str | None
) -> None:
    if match is None:
        Document(id="a", text="x", **kwargs)
        return
    with pytest.raises(InvalidDocumentError, match=match):
        Document(id="a", text="x", **kwargs)


def test_add_rechecks_metadata_changed_after_the_document_was_made() -> None:
    meta: dict[str, Any] = {"ok": 1}
    doc = Document(id="a", text="x", metadata=meta)
    meta.update({f"k{i}": "v" for i in range(8000)})
    with pytest.raises(InvalidDocumentError, match="8,001 keys"):
        check_storable(doc)
    meta.clear()
    meta[1] = "not a str key"  # type: ignore[index]
    with pytest.raises(InvalidDocumentError, match="keys must be non-empty str"):
        check_storable(doc)


def test_memory_metadata_limits_leave_room_for_the_bookkeeping() -> None:
    check_metadata({f"k{i}": "v" for i in range(MAX_MEMORY_METADATA_KEYS)})
    with pytest.raises(InvalidInputError, match="225 keys, over the limit of 224"):
        check_metadata({f"k{i}": "v" for i in range(MAX_MEMORY_METADATA_KEYS + 1)})
    with pytest.raises(InvalidInputError, match="over the limit of 196,608"):
        check_metadata({f"k{i}": "x" * 60_000 for i in range(4)})
    assert len(check_document_ids([f"d{i}" for i in range(MAX_LINKED_DOCUMENTS)])) == 100
    with pytest.raises(InvalidInputError, match="101 ids"):
        check_document_ids([f"d{i}" for i in range(MAX_LINKED_DOCUMENTS + 1)])
    with pytest.raises(InvalidInputError, match="characters as JSON"):
        check_document_ids(["é" * 500 + str(i) for i in range(20)])


# -- deep and hostile values in messages (item 2) ------------------------------------------


def test_deeply_nested_values_give_remy_errors_not_recursion_errors() -> None:
    """On main each of these raised RecursionError building the error message."""
    deep = _deep_list(100_000)
    with pytest.raises(InvalidDocumentError, match=r"\[\[\[\[\.\.\.\]\]\]\]"):
        Document(id="a", text="x", metadata={"k": deep})  # type: ignore[dict-item]
    with pytest.raises(InvalidDocumentError, match="metadata must be a mapping"):
        Document(id="a", text="x", metadata=deep)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="metadata must be a dict"):
        check_metadata(deep)
    with pytest.raises(InvalidInputError, match="takes a list"):
        as_list({"k": deep}, "get_documents()", "['a']")
    with pytest.raises(InvalidInputError, match="weights"):
        SearchOptions(weights={"semantic": deep})  # type: ignore[dict-item]
    with pytest.raises(InvalidInputError, match="must be an int"):
        SearchOptions(k=deep)  # type: ignore[arg-type]


def test_short_repr_is_bounded_and_never_raises() -> None:
    class Hostile:
        def __repr__(self) -> str:
            raise RecursionError

    assert short_repr(_deep_list(100_000)) == "[[[[...]]]]"
    assert short_repr(10**10_000) == "<int of 33220 bits>"
    assert len(short_repr("x" * 10_000_000)) <= 80
    assert "Hostile" in short_repr(Hostile())


# -- 64-bit ints (item 5) ------------------------------------------------------------------


def test_int64_minimum_is_storable_and_one_past_either_end_is_not() -> None:
    """On main -2**63 was rejected as 'does not fit in 64 bits'."""
    check_storable(Document(id="a", text="x", metadata={"lo": -(2**63), "hi": 2**63 - 1}))
    LexicalRecord("a#0", "a", "x", {"lo": -(2**63)}, "h")
    for bad in (2**63, -(2**63) - 1):
        with pytest.raises(InvalidDocumentError, match="does not fit in 64 bits"):
            check_storable(Document(id="a", text="x", metadata={"n": bad}))
        with pytest.raises(InvalidDocumentError, match="does not fit in 64 bits"):
            LexicalRecord("a#0", "a", "x", {"n": bad}, "h")


# -- non-finite search options (item 4) ------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"weights": {"semantic": math.nan}}, r"weights\['semantic'\].*nan"),
        ({"weights": {"lexical": math.inf}}, r"weights\['lexical'\].*inf"),
        ({"weights": {"lexical": 10**400}}, r"weights\['lexical'\]"),
        ({"rrf_k": math.inf}, "rrf_k must be a finite number >= 0, got inf"),
        ({"rrf_k": math.nan}, "rrf_k.*nan"),
        ({"rrf_k": 10**400}, "rrf_k"),
        ({"min_score": math.nan}, "min_score must be a finite number or None, got nan"),
        ({"min_score": -math.inf}, "min_score.*-inf"),
        ({"min_score": math.inf}, "min_score.*inf"),
        ({"alpha": math.nan}, "alpha.*nan"),
    ],
)
def test_non_finite_numbers_in_options_are_rejected_naming_the_value(
    kwargs: dict[str, Any], match: str
) -> None:
    """On main weights NaN/inf, rrf_k=inf and min_score=nan/inf were accepted."""
    with pytest.raises(InvalidInputError, match=match):
        SearchOptions(**kwargs)


def test_finite_options_still_work() -> None:
    options = SearchOptions(weights={"semantic": 0.0, "lexical": 2}, rrf_k=0, min_score=-1e300)
    assert options.branch_weights == {"semantic": 0.0, "lexical": 2.0}


# -- reranker output (item 4) ----------------------------------------------------------------


class Fixed:
    """A reranker returning whatever ``make`` builds from the texts."""

    def __init__(self, make: Any) -> None:
        self.make = make

    def score(self, query: str, texts: Sequence[str]) -> Any:
        return self.make(texts)


ITEMS = ["alpha", "beta", "gamma"]


def _rerank(reranker: Any) -> list[str]:
    out = rerank("q", ITEMS, reranker, text=lambda t: t, score=lambda t: None)
    return [r.item for r in out]


def test_a_generator_or_array_of_scores_is_accepted() -> None:
    """On main a generator raised TypeError (len() of a generator)."""
    as_list_ = _rerank(Fixed(lambda texts: [0.1, 0.9, 0.5]))
    assert as_list_ == ["beta", "gamma", "alpha"]
    assert _rerank(Fixed(lambda texts: (s for s in [0.1, 0.9, 0.5]))) == as_list_
    assert _rerank(Fixed(lambda texts: np.array([0.1, 0.9, 0.5], dtype=np.float32))) == as_list_
    assert _rerank(Fixed(lambda texts: (0, 2, 1))) == ["beta", "gamma", "alpha"]


def _endless(texts: Sequence[str]) -> Iterator[float]:
    while True:
        yield 0.5


def _boom(texts: Sequence[str]) -> list[float]:
    msg = "model exploded"
    raise RuntimeError(msg)


def _fails_midway(texts: Sequence[str]) -> Iterator[float]:
    yield 0.5
    msg = "stream broke"
    raise OSError(msg)


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda texts: None, "returned NoneType None"),
        (lambda texts: 0.5, "returned float 0.5"),
        (lambda texts: "0.1 0.2 0.3", "returned str"),
        (lambda texts: {"a": 1}, "returned dict"),
        (lambda texts: [0.1, 0.2], "returned 2 scores for 3 texts"),
        (_endless, "returned more than 3 scores for 3 texts"),
        (lambda texts: [0.1, math.nan, 0.3], "returned nan as the score of text 1"),
        (lambda texts: [0.1, 0.2, math.inf], "returned inf as the score of text 2"),
        (lambda texts: ["0.1", 0.2, 0.3], "returned '0.1' as the score of text 0"),
        (lambda texts: [None, 0.2, 0.3], "returned None as the score of text 0"),
        (lambda texts: [True, 0.2, 0.3], "returned True as the score"),
        (lambda texts: [10**400, 0.2, 0.3], "<int of 1329 bits> as the score"),
        (lambda texts: np.array([[0.1], [0.2], [0.3]]), "as the score of text 0"),
        (_boom, "failed: RuntimeError: model exploded"),
        (_fails_midway, "failed while yielding scores: OSError"),
    ],
)
def test_bad_reranker_output_is_an_invalid_input_error_naming_the_reranker(
    make: Any, match: str
) -> None:
    """On main None and generators raised TypeError, NaN/inf were used as scores."""
    with pytest.raises(InvalidInputError, match=match) as info:
        _rerank(Fixed(make))
    assert "the reranker Fixed" in str(info.value)
    assert "one finite float per text" in str(info.value) or "failed" in str(info.value)
