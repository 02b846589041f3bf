"""RemyVectorStore keeps every page and node (stable ids from the
source, page and offset), re-indexing replaces instead of copying, metadata comes back
exactly or is refused with an InvalidDocumentError naming the key, and user metadata never
changes what ``delete`` removes. Real Chroma, tantivy, MiniLM and LlamaIndex; the
property tests run random sequences and random metadata against a simple model."""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import Document as LIDocument
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode
from llama_index.retrievers.remy import node_to_hit
from llama_index.vector_stores.remy import NoEmbedding, RemyVectorStore

from remy_retriever import InvalidDocumentError, RemyError, Retriever, SentenceTransformerEmbedder

PAGE_TEXT = "Quarterly revenue grew in every region and the board approved the budget."
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@pytest.fixture
def engine(tmp_path: Path, embedder: SentenceTransformerEmbedder) -> Iterator[Retriever]:
    with Retriever(tmp_path / "store", collection="li-ids", embedder=embedder) as retriever:
        yield retriever


@pytest.fixture(scope="module")
def shared(
    tmp_path_factory: pytest.TempPathFactory, embedder: SentenceTransformerEmbedder
) -> Iterator[RemyVectorStore]:
    """One store for the property tests; each example empties it first."""
    root = tmp_path_factory.mktemp("li-properties")
    with Retriever(root, collection="li-properties", embedder=embedder) as retriever:
        yield RemyVectorStore(retriever)


def _pdf_pages() -> list[LIDocument]:
    """A 4-page PDF as ``SimpleDirectoryReader`` loads it: one Document per page, random
    ids, ``file_path`` and ``page_label`` in the metadata."""
    return [
        LIDocument(
            text=f"Page {n}. {PAGE_TEXT}",
            metadata={
                "file_path": "/data/report.pdf",
                "file_name": "report.pdf",
                "page_label": f"{n}",
            },
        )
        for n in range(1, 5)
    ]


def _index(engine: Retriever) -> VectorStoreIndex:
    return VectorStoreIndex(
        [],
        storage_context=StorageContext.from_defaults(vector_store=RemyVectorStore(engine)),
        embed_model=NoEmbedding(),
    )


# -- regressions ------------------------------------------------------------------------


def test_pages_inserted_one_by_one_are_all_kept(engine: Retriever) -> None:
    index = _index(engine)
    for page in _pdf_pages():
        index.insert(page)
    assert engine.count() == 4
    texts = sorted(n.get_content() for n in index.vector_store.get_nodes())  # type: ignore[attr-defined]
    assert texts == sorted(p.text for p in _pdf_pages())


def test_indexing_the_same_file_again_replaces_its_nodes(engine: Retriever) -> None:
    store = RemyVectorStore(engine)
    for _ in range(2):
        VectorStoreIndex.from_documents(
            _pdf_pages(),
            storage_context=StorageContext.from_defaults(vector_store=store),
            embed_model=NoEmbedding(),
            transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0)],
        )
        assert len(store.get_nodes()) == 4
    assert engine.count() == 4


def test_dotted_nested_and_reserved_keys_come_back(engine: Retriever) -> None:
    store = RemyVectorStore(engine)
    metadata = {"a.b": 1, "a": {"b": 2}, "ref_doc_id": "mine", "li_node_id": "also mine"}
    store.add([TextNode(id_="m", text="keys", metadata=metadata)])
    (node,) = store.get_nodes(node_ids=["m"])
    assert node.metadata == metadata
    assert node.ref_doc_id is None  # the user's key is not the node's source


def test_a_list_with_commas_breaks_nothing(engine: Retriever) -> None:
    store = RemyVectorStore(engine)
    metadata = {"authors, editors": ["Doe, J.", "Roe, R."], "tags": ["a,b"]}
    store.add([TextNode(id_="c", text="comma list", metadata=metadata)])
    assert store.get_nodes(node_ids=["c"])[0].metadata == metadata
    result = store.query(VectorStoreQuery(query_str="comma list", similarity_top_k=1))
    assert result.nodes is not None and node_to_hit(result.nodes[0]).metadata == metadata


def test_user_metadata_never_changes_what_delete_removes(engine: Retriever) -> None:
    store = RemyVectorStore(engine)
    source = RelatedNodeInfo(node_id="doc-a")
    store.add(
        [
            TextNode(
                id_="a1", text="a node of doc-a", relationships={NodeRelationship.SOURCE: source}
            ),
            TextNode(id_="stray", text="a node of no document", metadata={"ref_doc_id": "doc-a"}),
        ]
    )
    store.delete("doc-a")
    assert [n.node_id for n in store.get_nodes()] == ["stray"]


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ({"score": math.nan}, r"metadata\['score'\] = nan .* use None"),  # pandas' NaN
        ({"n": {"big": -(2**64)}}, r"metadata\['n'\]\['big'\] = -\d+ does not fit in 64 bits"),
        ({"l": [math.inf]}, r"metadata\['l'\] = inf"),
    ],
)
def test_nan_and_huge_ints_are_refused_naming_the_key(
    engine: Retriever, metadata: dict[str, Any], message: str
) -> None:
    store = RemyVectorStore(engine)
    with pytest.raises(InvalidDocumentError, match=message):
        store.add(
            [TextNode(id_="ok", text="fine"), TextNode(id_="bad", text="x", metadata=metadata)]
        )
    assert engine.count() == 0


# -- properties ---------------------------------------------------------------------------

KEYS = st.one_of(
    st.text(max_size=6),
    st.sampled_from(
        [
            "a",
            "a.b",
            "b",
            "ref_doc_id",
            "li_node_id",
            "li_encoding",
            "li_json_keys",
            "li_prev",
            "remy_x",
            "lc.remy_x",
            "$op",
            "#h",
            "~",
            "~1",
            "",
            "ü.ß",
            "日本",
            "file_path",
            "score",
        ]
    ),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**65), max_value=2**65),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8),
    st.sampled_from(["a,b", "[1, 2]", "null"]),
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


def _empty(store: RemyVectorStore) -> None:
    store.clear()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(metadata=METADATA)
def test_random_metadata_round_trips_exactly_or_is_refused(
    shared: RemyVectorStore, metadata: dict[str, Any]
) -> None:
    _empty(shared)
    node = TextNode(id_="probe", text="metadata probe", metadata=metadata)
    if unstorable(metadata):
        with pytest.raises(InvalidDocumentError):
            shared.add([node])
        assert shared.client.count() == 0
        return
    shared.add([node])
    (back,) = shared.get_nodes(node_ids=["probe"])
    assert back.metadata == metadata
    for mode in (VectorStoreQueryMode.DEFAULT, VectorStoreQueryMode.SPARSE):
        result = shared.query(VectorStoreQuery(query_str="metadata probe", mode=mode))
        assert result.nodes is not None and node_to_hit(result.nodes[0]).metadata == metadata


REFS = (None, "doc-a", "doc-b", str(uuid.UUID(int=1, version=4)), str(uuid.UUID(int=2, version=4)))
TEXTS = ("alpha apples", "beta bridges", "gamma gardens")
PIECES = st.tuples(
    st.sampled_from((None, "n1", "n2")),  # a node id given (None: a random one)
    st.sampled_from(REFS),
    st.sampled_from((None, "/data/report.pdf")),  # file_path
    st.sampled_from((None, "1", "2")),  # page_label
    st.sampled_from((0, 40)),  # start_char_idx
    st.sampled_from(TEXTS),
    st.sampled_from(({}, {"tag": "t"}, {"n": {"k": [1, "a,b"]}})),
)
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.lists(PIECES, min_size=1, max_size=4)),
        st.tuples(st.just("batches"), st.lists(PIECES, min_size=2, max_size=6), st.integers(2, 3)),
        st.tuples(st.just("readd"), st.integers(0, 20), st.sampled_from(TEXTS)),
        st.tuples(st.just("delete"), st.sampled_from(REFS[1:])),
        st.tuples(st.just("delete_nodes"), st.integers(0, 20)),
    ),
    min_size=1,
    max_size=6,
)


def _node(piece: tuple[Any, ...]) -> TextNode:
    node_id, ref, path, page, start, text, extra = piece
    metadata: dict[str, Any] = dict(extra)
    if path is not None:
        metadata["file_path"] = path
    if page is not None:
        metadata["page_label"] = page
    relationships = {} if ref is None else {NodeRelationship.SOURCE: RelatedNodeInfo(node_id=ref)}
    return TextNode(
        id_=node_id or str(uuid.uuid4()),
        text=f"{text} {ref} {page} {start}",
        metadata=metadata,
        start_char_idx=start,
        relationships=relationships,
    )


def _identities(nodes: list[TextNode]) -> list[tuple[Any, ...]]:
    """The model's rule, written out: a node id that is not random; else the source (a
    ref doc id that is not random, else the file) with its page and, for a split node,
    its offset (and the content when several different nodes of the call share them);
    else the content."""

    def position(node: TextNode) -> tuple[Any, ...] | None:
        ref = node.ref_doc_id
        source = ref if ref is not None and not _UUID.match(ref) else node.metadata.get("file_path")
        if source is None:
            return None
        start = node.start_char_idx if ref is not None else None
        return (source, node.metadata.get("page_label"), start)

    def content(node: TextNode) -> str:
        return repr((node.text, node.metadata))

    shared_positions: dict[tuple[Any, ...], set[str]] = {}
    for node in nodes:
        where = position(node)
        if _UUID.match(node.node_id) and where is not None:
            shared_positions.setdefault(where, set()).add(content(node))
    out: list[tuple[Any, ...]] = []
    for node in nodes:
        where = position(node)
        if not _UUID.match(node.node_id):
            out.append(("id", node.node_id))
        elif where is None:
            out.append(("content", content(node)))
        elif len(shared_positions[where]) > 1:
            out.append(("position+content", *where, content(node)))
        else:
            out.append(("position", *where))
    return out


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operations=OPERATIONS)
def test_random_adds_readds_deletes_and_batches_match_a_simple_model(
    shared: RemyVectorStore, operations: list[tuple[Any, ...]]
) -> None:
    _empty(shared)
    model: dict[tuple[Any, ...], TextNode] = {}
    history: list[tuple[Any, ...]] = []

    def add(pieces: list[tuple[Any, ...]]) -> None:
        nodes = [_node(p) for p in pieces]
        given_ids = [p[0] for p in pieces if p[0] is not None]
        if len(set(given_ids)) < len(given_ids):  # one id twice in a call: refused, loudly
            before = shared.client.document_ids()
            with pytest.raises(RemyError, match="twice"):
                shared.add(nodes)
            assert shared.client.document_ids() == before
            return
        assert shared.add(nodes) == [n.node_id for n in nodes]
        for node, identity in zip(nodes, _identities(nodes)):
            model[identity] = node
        history.extend(pieces)

    for op in operations:
        if op[0] == "add":
            add(op[1])
        elif op[0] == "batches":
            size = max(1, len(op[1]) // op[2])
            for i in range(0, len(op[1]), size):
                add(op[1][i : i + size])
        elif op[0] == "readd" and history:
            old = history[op[1] % len(history)]
            add([(*old[:5], op[2], old[6])])
        elif op[0] == "delete":
            shared.delete(op[1])
            model = {k: n for k, n in model.items() if n.ref_doc_id != op[1]}
        elif op[0] == "delete_nodes" and model:
            node_id = sorted(n.node_id for n in model.values())[op[1] % len(model)]
            shared.delete_nodes([node_id])
            model = {k: n for k, n in model.items() if n.node_id != node_id}

    def view(node: Any) -> tuple[str, str | None, str, str]:
        return (
            node.node_id,
            node.ref_doc_id,
            node.get_content(),
            repr(sorted(node.metadata.items())),
        )

    assert sorted(map(view, shared.get_nodes())) == sorted(map(view, model.values()))
    assert shared.client.count() == len(model)  # one chunk per stored node


def test_metadata_written_before_li_encoding_still_reads_and_never_raises() -> None:
    from llama_index.vector_stores.remy import from_remy_metadata

    old = {"a": "plain", "a,b": "[1]", "tags": '["x,y"]', "li_json_keys": "a,b,tags"}
    assert from_remy_metadata(old) == {"a": "plain", "a,b": "[1]", "tags": ["x,y"]}
