"""The document- and memory-search wire models against the spec's JSON (no I/O)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from remy_retriever import RemyError
from remy_retriever.search.grouped import lead_summary
from remy_retriever.supermemory.responses import (
    ChunkResult,
    DocumentSearchResponse,
    InvalidResponseError,
    MemoryResult,
    MemorySearchResponse,
)

SPEC = Path(__file__).resolve().parents[3] / "shared" / "spec" / "supermemory-response-schema.md"


def _spec_examples() -> list[dict[str, Any]]:
    text = SPEC.read_text(encoding="utf-8")
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", text, re.S)]
    # The spec holds: the document search response, a metadata snippet, and two memory
    # search responses (memories mode, hybrid mode).
    return [b for b in blocks if "results" in b]


@pytest.fixture(scope="module")
def examples() -> list[dict[str, Any]]:
    if not SPEC.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"the spec is missing at {SPEC}")
        pytest.skip(f"the spec is not at {SPEC}")
    found = _spec_examples()
    assert len(found) == 3
    return found


def test_spec_document_example_round_trips(examples: list[dict[str, Any]]) -> None:
    doc = examples[0]
    parsed = DocumentSearchResponse.parse(doc)
    assert parsed.to_dict() == doc
    assert json.loads(parsed.to_json()) == doc
    assert DocumentSearchResponse.parse(json.dumps(doc)).to_dict() == doc
    result = parsed.results[0]
    assert result.document_id == "doc_abc123"
    assert result.chunks[0].is_relevant is True
    assert result.created_at == "2024-01-15T10:30:00Z"
    assert result.content is None and "content" not in result.to_dict()


@pytest.mark.parametrize("index", [1, 2])
def test_spec_memory_examples_round_trip(examples: list[dict[str, Any]], index: int) -> None:
    data = examples[index]
    parsed = MemorySearchResponse.parse(json.dumps(data))
    assert parsed.to_dict() == data
    assert json.loads(parsed.to_json(indent=2)) == data
    # Re-parsing our own output is stable too.
    assert MemorySearchResponse.parse(parsed.to_json()).to_dict() == data


def test_hybrid_example_tells_memories_from_chunks(examples: list[dict[str, Any]]) -> None:
    parsed = MemorySearchResponse.parse(examples[2])
    memory, chunk = parsed.results
    assert isinstance(memory, MemoryResult) and memory.kind == "memory"
    assert isinstance(chunk, ChunkResult) and chunk.kind == "chunk"
    assert chunk.chunk.startswith("This is a chunk")
    assert memory.documents is not None and memory.documents[0].id == "doc_quantum_paper"
    assert "chunk" not in memory.to_dict() and "memory" not in chunk.to_dict()
    parents = MemorySearchResponse.parse(examples[1]).results[0].context
    assert parents is not None and parents.parents[0].relation == "extends"


def test_snake_case_names_are_accepted_and_written_camel_case() -> None:
    result = MemoryResult(
        id="mem_1",
        memory="text",
        similarity=0.5,
        updated_at="2024-01-01T00:00:00Z",
        root_memory_id="mem_1",
    )
    assert result.to_dict() == {
        "id": "mem_1",
        "memory": "text",
        "similarity": 0.5,
        "updatedAt": "2024-01-01T00:00:00Z",
        "rootMemoryId": "mem_1",
    }
    chunk = ChunkResult.model_validate(
        {
            "id": "d#0",
            "chunk": "c",
            "similarity": 1,
            "updatedAt": "2024-01-01",
            "rootMemoryId": None,
        }
        | {"updatedAt": "2024-01-01T00:00Z"}
    )
    assert chunk.to_dict()["rootMemoryId"] is None  # explicitly null stays null
    assert chunk.to_dict()["similarity"] == 1 and isinstance(chunk.similarity, int)


def test_unknown_fields_are_kept_at_every_level(examples: list[dict[str, Any]]) -> None:
    data = json.loads(json.dumps(examples[2]))
    data["requestId"] = "req_1"
    data["results"][0]["score_debug"] = {"bm25": 3.2}
    data["results"][0]["context"]["parents"] = [
        {
            "memory": "m",
            "relation": "updates",
            "version": -1,
            "updatedAt": "2024-01-17T16:30:00Z",
            "confidence": 0.4,
        }
    ]
    data["results"][1]["documents"][0]["url"] = "https://example.com/q.pdf"
    parsed = MemorySearchResponse.parse(data)
    assert parsed.to_dict() == data
    assert parsed.model_extra == {"requestId": "req_1"}


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d["results"][0].update(score=1.5), "results[0].score"),
        (
            lambda d: d["results"][0]["chunks"][0].pop("isRelevant"),
            "results[0].chunks[0].isRelevant",
        ),
        (lambda d: d["results"][0].update(createdAt="yesterday"), "results[0].createdAt"),
        (lambda d: d["results"][0].update(documentId=7), "results[0].documentId"),
        (lambda d: d.update(total=-1), "total"),
        (lambda d: d.pop("timing"), "timing"),
    ],
)
def test_document_validation_errors_name_the_field(
    examples: list[dict[str, Any]], mutate: Any, field: str
) -> None:
    data = json.loads(json.dumps(examples[0]))
    mutate(data)
    with pytest.raises(InvalidResponseError) as info:
        DocumentSearchResponse.parse(data)
    assert field in str(info.value)
    assert isinstance(info.value, RemyError) and info.value.errors
    # The plain pydantic entry point raises pydantic's error, also naming the field.
    with pytest.raises(ValidationError, match=re.escape(field.split(".")[-1].split("[")[0])):
        DocumentSearchResponse.model_validate(data)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d["results"][0].update(similarity=-0.1), "results[0].similarity"),
        (
            lambda d: d["results"][0]["context"]["parents"][0].update(relation="replaces"),
            "results[0].context.parents[0].relation",
        ),
        (lambda d: d["results"][0].pop("memory"), "results[0]"),
        (lambda d: d["results"][0].update(chunk="both"), "results[0]"),
        (lambda d: d["results"][0]["documents"][0].pop("id"), "results[0].documents[0].id"),
    ],
)
def test_memory_validation_errors_name_the_field(
    examples: list[dict[str, Any]], mutate: Any, field: str
) -> None:
    data = json.loads(json.dumps(examples[1]))
    mutate(data)
    with pytest.raises(InvalidResponseError) as info:
        MemorySearchResponse.parse(data)
    assert f"{field}:" in str(info.value)


def test_missing_kind_key_explains_the_fix() -> None:
    bad = {"results": [{"id": "x", "similarity": 0.2, "updatedAt": "2024-01-01T00:00:00Z"}]}
    with pytest.raises(InvalidResponseError, match="'memory' .* or 'chunk'"):
        MemorySearchResponse.parse({**bad, "timing": 1, "total": 1})


def test_parse_rejects_non_json_and_non_objects() -> None:
    with pytest.raises(InvalidResponseError, match="not valid JSON"):
        MemorySearchResponse.parse("{not json")
    with pytest.raises(InvalidResponseError, match="expected a JSON object"):
        DocumentSearchResponse.parse([1, 2])


# -- property: generated responses round-trip ----------------------------------------------

_text = st.text(max_size=30)
_score = st.one_of(st.floats(0, 1, allow_nan=False), st.sampled_from([0, 1]))
_stamp = st.builds(
    lambda y, mo, d, h, mi, s, frac, tz: (
        f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}{frac}{tz}"
    ),
    st.integers(1970, 2100),
    st.integers(1, 12),
    st.integers(1, 28),
    st.integers(0, 23),
    st.integers(0, 59),
    st.integers(0, 59),
    st.sampled_from(["", ".5", ".123456"]),
    st.sampled_from(["Z", "+02:00", "-05:30", ""]),
)
_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    _text,
    st.floats(allow_nan=False, allow_infinity=False),
)
_json = st.recursive(
    _scalar,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_text, inner, max_size=3)),
    max_leaves=6,
)
_metadata = st.one_of(st.none(), st.dictionaries(_text, _json, max_size=3))
_extra = st.dictionaries(st.sampled_from(["x-debug", "requestId", "rank"]), _json, max_size=2)


def _object(required: dict[str, Any], optional: dict[str, Any]) -> st.SearchStrategy[Any]:
    return st.builds(
        lambda base, opt, extra: {**extra, **base, **opt},
        st.fixed_dictionaries(required),
        st.fixed_dictionaries({}, optional=optional),
        _extra,
    )


_chunk = _object({"content": _text, "score": _score, "isRelevant": st.booleans()}, {})
_document_result = _object(
    {
        "documentId": _text,
        "score": _score,
        "chunks": st.lists(_chunk, max_size=3),
        "createdAt": _stamp,
        "updatedAt": _stamp,
    },
    {
        "title": st.one_of(st.none(), _text),
        "type": st.one_of(st.none(), _text),
        "metadata": _metadata,
        "content": st.one_of(st.none(), _text),
        "summary": st.one_of(st.none(), _text),
    },
)
_context_entry = _object(
    {
        "memory": _text,
        "relation": st.sampled_from(["updates", "extends", "derives"]),
        "updatedAt": _stamp,
    },
    {"version": st.one_of(st.none(), st.integers(-20, 20)), "metadata": _metadata},
)
_linked = _object(
    {"id": _text},
    {
        "title": st.one_of(st.none(), _text),
        "type": st.one_of(st.none(), _text),
        "metadata": _metadata,
        "createdAt": _stamp,
        "updatedAt": _stamp,
    },
)
_result_optional = {
    "metadata": _metadata,
    "version": st.one_of(st.none(), st.integers(1, 50)),
    "rootMemoryId": st.one_of(st.none(), _text),
    "context": _object(
        {},
        {
            "parents": st.lists(_context_entry, max_size=2),
            "children": st.lists(_context_entry, max_size=2),
        },
    ),
    "documents": st.lists(_linked, max_size=2),
}
_memory_result = _object(
    {"id": _text, "memory": _text, "similarity": _score, "updatedAt": _stamp}, _result_optional
)
_chunk_result = _object(
    {"id": _text, "chunk": _text, "similarity": _score, "updatedAt": _stamp}, _result_optional
)
_timing = st.one_of(st.integers(0, 10**6), st.floats(0, 1e6))


@settings(max_examples=60, deadline=None)
@given(
    _object(
        {
            "results": st.lists(_document_result, max_size=3),
            "timing": _timing,
            "total": st.integers(0, 100),
        },
        {},
    )
)
def test_generated_document_responses_round_trip(data: dict[str, Any]) -> None:
    parsed = DocumentSearchResponse.parse(json.dumps(data))
    assert parsed.to_dict() == data
    assert json.loads(parsed.to_json()) == data


@settings(max_examples=60, deadline=None)
@given(
    _object(
        {
            "results": st.lists(st.one_of(_memory_result, _chunk_result), max_size=4),
            "timing": _timing,
            "total": st.integers(0, 100),
        },
        {},
    )
)
def test_generated_memory_responses_round_trip(data: dict[str, Any]) -> None:
    parsed = MemorySearchResponse.parse(data)
    assert parsed.to_dict() == data
    assert json.loads(parsed.to_json()) == data
    kinds = ["memory" if "memory" in r else "chunk" for r in data["results"]]
    assert [r.kind for r in parsed.results] == kinds


# -- the extractive summary ----------------------------------------------------------------


def test_lead_summary_keeps_whole_leading_sentences() -> None:
    text = (
        "# Title\n\nFirst sentence here. Second one follows! "
        + "Third is long. " * 40
        + "\n\n```\ncode()\n```\n"
    )
    summary = lead_summary(text, max_chars=60)
    assert summary == "First sentence here. Second one follows! Third is long."
    assert len(lead_summary(text)) <= 300


def test_lead_summary_flattens_markdown_and_cuts_long_sentences() -> None:
    text = "## Intro\n\n- See the [guide](https://x) for **details** and `code`.\n"
    assert lead_summary(text) == "See the guide for details and code."
    long = "word " * 200
    cut = lead_summary(long, max_chars=50)
    assert cut.endswith("…") and len(cut) <= 50 and not cut[:-1].endswith(" ")
    assert lead_summary("# Only a heading\n") == ""
