"""RemyVectorStore keeps every piece (stable ids from the source, page
and offset, never a per-call counter) and gives its metadata back exactly, or refuses it
with an InvalidDocumentError naming the key. Real Chroma, tantivy and MiniLM; the
property tests run random sequences and random metadata against a simple model."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document
from langchain_remy import RemyVectorStore, metadata_from_remy, metadata_to_remy
from langchain_text_splitters import RecursiveCharacterTextSplitter

from remy_retriever import InvalidDocumentError, RemyError, Retriever, SentenceTransformerEmbedder

PAGE_TEXT = (
    "Quarterly revenue grew in every region. The board approved the budget. "
    "Staff numbers stayed flat while support tickets fell by a third. "
)


@pytest.fixture
def store(tmp_path: Path, embedder: SentenceTransformerEmbedder) -> Iterator[RemyVectorStore]:
    with Retriever(tmp_path, collection="lc-ids", embedder=embedder) as engine:
        yield RemyVectorStore(engine)


@pytest.fixture(scope="module")
def shared(
    tmp_path_factory: pytest.TempPathFactory, embedder: SentenceTransformerEmbedder
) -> Iterator[RemyVectorStore]:
    """One store for the property tests; each example empties it first."""
    root = tmp_path_factory.mktemp("lc-properties")
    with Retriever(root, collection="lc-properties", embedder=embedder) as engine:
        yield RemyVectorStore(engine)


def _empty(store: RemyVectorStore) -> None:
    ids = store.retriever.document_ids()
    if ids:
        store.delete(ids)


def _pdf_page(n: int) -> Document:
    """A page as PyPDFLoader gives it: ``source``, 0-based ``page`` and ``page_label``."""
    return Document(
        page_content=f"Page {n + 1}. {PAGE_TEXT * 2}",
        metadata={"source": "report.pdf", "page": n, "page_label": str(n + 1)},
    )


# -- regressions ------------------------------------------------------------------------


def test_five_pages_added_one_call_each_leave_five_documents(store: RemyVectorStore) -> None:
    ids = [store.add_documents([_pdf_page(n)])[0] for n in range(5)]
    assert len(set(ids)) == 5
    assert store.retriever.count() == 5
    assert [d.page_content for d in store.get_by_ids(ids)] == [
        _pdf_page(n).page_content for n in range(5)
    ]
    assert [store.add_documents([_pdf_page(n)])[0] for n in range(5)] == ids  # replaced
    assert len(store.retriever.document_ids()) == 5


def test_chunks_added_in_three_batches_are_all_kept(store: RemyVectorStore) -> None:
    chunks = [
        Document(
            page_content=f"Handbook rule {i}: keep the desk number {i} tidy.",
            metadata={"source": "handbook.txt", "start_index": 50 * i},
        )
        for i in range(250)
    ]
    ids = [
        i
        for batch in (chunks[:100], chunks[100:200], chunks[200:])
        for i in store.add_documents(batch)
    ]
    assert len(set(ids)) == 250
    assert len(store.retriever.document_ids()) == 250
    # Without start_index, one source's pieces are told apart by their content.
    plain = [Document(page_content=c.page_content, metadata={"source": "h.txt"}) for c in chunks]
    plain_ids = [
        i for b in (plain[:100], plain[100:200], plain[200:]) for i in store.add_documents(b)
    ]
    assert len(set(plain_ids)) == 250
    assert len(store.retriever.document_ids()) == 500


def test_splitter_output_with_start_index_is_accepted(store: RemyVectorStore) -> None:
    pages = [_pdf_page(n) for n in range(3)]
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=120, chunk_overlap=40, add_start_index=True
    )
    chunks = splitter.split_documents(pages)
    assert len({c.metadata["start_index"] for c in chunks}) < len(chunks)  # per-page offsets
    ids = store.add_documents(chunks)
    assert len(set(ids)) == len(chunks)
    assert store.add_documents(splitter.split_documents(pages)) == ids
    assert len(store.retriever.document_ids()) == len(chunks)
    back = store.get_by_ids(ids)
    assert [(d.page_content, d.metadata) for d in back] == [
        (c.page_content, c.metadata) for c in chunks
    ]


def test_dotted_and_nested_keys_both_come_back(store: RemyVectorStore) -> None:
    metadata = {"a.b": 1, "a": {"b": 2}, "remy_x": 1, "lc.remy_x": 2, "lc_encoding": "mine"}
    [doc_id] = store.add_documents([Document(id="m", page_content="keys", metadata=metadata)])
    assert store.get_by_ids([doc_id])[0].metadata == metadata
    # The nested key is filterable under its dotted path.
    assert [d.id for d in store.similarity_search("keys", k=2, filter={"a.b": 2})] == ["m"]


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({"score": float("nan")}, r"metadata\['score'\] = nan .* use None"),  # pandas' NaN
        ({"n": {"big": 2**64}}, r"metadata\['n'\]\['big'\] = \d+ does not fit in 64 bits"),
        ({"l": [1, float("inf")]}, r"metadata\['l'\] = inf"),
        ({"l": [-(2**63) - 1]}, r"metadata\['l'\] = -\d+ does not fit"),
    ],
)
def test_nan_and_huge_ints_are_refused_naming_the_key(
    store: RemyVectorStore, metadata: dict[str, Any], message: str
) -> None:
    good = Document(id="good", page_content="fine", metadata={"ok": 1})
    bad = Document(id="bad", page_content="not fine", metadata=metadata)
    with pytest.raises(InvalidDocumentError, match=message):
        store.add_documents([good, bad])
    assert store.retriever.count() == 0


def test_lists_with_commas_and_nulls_come_back_under_colliding_keys(
    store: RemyVectorStore,
) -> None:
    metadata = {
        "authors": ["Doe, J.", "Roe, R."],
        "k,v": [None, {"x": "1,2"}],
        "gone": None,
        "a.b": ["x,y"],
        "a": {"b": ["z"]},
    }
    store.add_documents([Document(id="l", page_content="lists", metadata=metadata)])
    assert store.get_by_ids(["l"])[0].metadata == metadata


def test_the_codec_is_one_to_one_on_colliding_keys() -> None:
    for metadata in ({"a.b": 1, "a": {"b": 2}}, {"remy_x": 1, "lc.remy_x": 2, "~remy_x": 3}):
        encoded = metadata_to_remy(metadata)
        assert len({k for k in encoded if k != "lc_encoding"}) == len(metadata)
        assert metadata_from_remy(encoded) == metadata


# -- properties ---------------------------------------------------------------------------

KEYS = st.one_of(
    st.text(max_size=6),
    st.sampled_from(
        [
            "a",
            "a.b",
            "b",
            "remy_x",
            "lc.remy_x",
            "lc_encoding",
            "ref_doc_id",
            "li_node_id",
            "$op",
            "#h",
            "~",
            "~1",
            "",
            "ü.ß",
            "clé",
            "日本",
            "source",
            "chroma:document",
        ]
    ),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**65), max_value=2**65),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8),
    st.sampled_from(["a,b", "[1, 2]", '{"x": 1}', "null"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=8,
)
METADATA = st.dictionaries(KEYS, VALUES, max_size=5)


def unstorable(value: Any) -> bool:
    """What the documented rule refuses: NaN, infinities and ints beyond 64 bits."""
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return not -(2**63) <= value < 2**63
    if isinstance(value, dict):
        return any(unstorable(v) for v in value.values())
    if isinstance(value, list):
        return any(unstorable(v) for v in value)
    return False


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(metadata=METADATA)
def test_random_metadata_round_trips_exactly_or_is_refused(
    shared: RemyVectorStore, metadata: dict[str, Any]
) -> None:
    _empty(shared)
    doc = Document(id="probe", page_content="metadata probe", metadata=metadata)
    if unstorable(metadata):
        with pytest.raises(InvalidDocumentError):
            shared.add_documents([doc])
        assert shared.retriever.count() == 0
        return
    assert shared.add_documents([doc]) == ["probe"]
    [back] = shared.get_by_ids(["probe"])
    assert back.metadata == metadata
    [(found, _)] = shared.similarity_search_with_score("metadata probe", k=1)
    assert found.metadata == metadata


SOURCES = ("report.pdf", "notes.txt", None)
TEXTS = ("alpha apples", "beta bridges", "gamma gardens", "delta dunes")
PIECES = st.tuples(
    st.sampled_from((None, "x1", "x2")),  # an explicit id
    st.sampled_from(SOURCES),
    st.sampled_from((None, 0, 1)),  # page
    st.sampled_from((None, 0, 40)),  # start_index
    st.sampled_from(TEXTS),
    st.sampled_from(({}, {"tag": "t"}, {"n": {"k": [1, "a,b"]}})),
)
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.lists(PIECES, min_size=1, max_size=4)),
        st.tuples(st.just("batches"), st.lists(PIECES, min_size=2, max_size=6), st.integers(2, 3)),
        st.tuples(st.just("readd"), st.integers(0, 20), st.sampled_from(TEXTS)),
        st.tuples(st.just("delete"), st.integers(0, 20)),
    ),
    min_size=1,
    max_size=6,
)


def _document(piece: tuple[Any, ...]) -> Document:
    given_id, source, page, start, text, extra = piece
    metadata: dict[str, Any] = dict(extra)
    if source is not None:
        metadata["source"] = source
    if page is not None:
        metadata["page"] = page
    if start is not None:
        metadata["start_index"] = start
    return Document(id=given_id, page_content=f"{text} {source} {page} {start}", metadata=metadata)


def _identities(docs: list[Document]) -> list[tuple[Any, ...]]:
    """The model's rule, written out: the given id; else source, page and offset (with
    the content too when several different pieces of the call share them); else the
    content."""

    def position(doc: Document) -> tuple[Any, ...] | None:
        source = doc.metadata.get("source")
        if source is None:
            return None
        return (source, doc.metadata.get("page"), doc.metadata.get("start_index"))

    contents: dict[tuple[Any, ...], set[str]] = {}
    for doc in docs:
        where = position(doc)
        if doc.id is None and where is not None:
            contents.setdefault(where, set()).add(repr((doc.page_content, doc.metadata)))
    out: list[tuple[Any, ...]] = []
    for doc in docs:
        where = position(doc)
        content = repr((doc.page_content, doc.metadata))
        if doc.id is not None:
            out.append(("id", doc.id))
        elif where is None:
            out.append(("content", content))
        elif len(contents[where]) > 1:
            out.append(("position+content", *where, content))
        else:
            out.append(("position", *where))
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations=OPERATIONS)
def test_random_adds_readds_deletes_and_batches_match_a_simple_model(
    shared: RemyVectorStore, operations: list[tuple[Any, ...]]
) -> None:
    _empty(shared)
    model: dict[tuple[Any, ...], Document] = {}
    ids: dict[tuple[Any, ...], str] = {}
    history: list[Document] = []

    def add(docs: list[Document]) -> None:
        given_ids = [d.id for d in docs if d.id is not None]
        if len(set(given_ids)) < len(given_ids):  # one id twice in a call: refused, loudly
            before = sorted(shared.retriever.document_ids())
            with pytest.raises(RemyError, match="twice"):
                shared.add_documents(docs)
            assert sorted(shared.retriever.document_ids()) == before
            return
        returned = shared.add_documents(docs)
        assert len(returned) == len(docs)
        for doc, identity, doc_id in zip(docs, _identities(docs), returned):
            assert ids.setdefault(identity, doc_id) == doc_id  # stable across calls
            model[identity] = doc
            history.append(doc)
        assert len(set(ids.values())) == len(ids)  # different pieces, different ids

    for op in operations:
        if op[0] == "add":
            add([_document(p) for p in op[1]])
        elif op[0] == "batches":
            docs = [_document(p) for p in op[1]]
            size = max(1, len(docs) // op[2])
            for i in range(0, len(docs), size):
                add(docs[i : i + size])
        elif op[0] == "readd" and history:
            old = history[op[1] % len(history)]
            add(
                [
                    Document(
                        id=old.id,
                        page_content=old.page_content + f" {op[2]}",
                        metadata=dict(old.metadata),
                    )
                ]
            )
        elif op[0] == "delete" and ids:
            identity = sorted(ids, key=repr)[op[1] % len(ids)]
            shared.delete([ids[identity]])
            model.pop(identity, None)

    live = {ids[identity]: doc for identity, doc in model.items()}
    assert sorted(shared.retriever.document_ids()) == sorted(live)
    back = {d.id: d for d in shared.get_by_ids(list(live))}
    for doc_id, doc in live.items():
        assert (back[doc_id].page_content, back[doc_id].metadata) == (
            doc.page_content,
            doc.metadata,
        )
