"""RemyVectorStore through LlamaIndex's own index, retrievers, query engine and
postprocessors, on real Chroma, tantivy and MiniLM."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llama_index.core import SimpleDirectoryReader, StorageContext, VectorStoreIndex
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.postprocessor import PrevNextNodePostprocessor
from llama_index.core.schema import Document as LIDocument
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
)
from llama_index.vector_stores.remy import NoEmbedding, RemyVectorStore, filters_to_where

from remy_retriever import InvalidDocumentError, InvalidFilterError, Retriever

from .conftest import CORPUS_DIR, INSTALL_QUERY

QUERIES = (INSTALL_QUERY, "reciprocal rank fusion", "metadata filter on tenant", "reranker model")


def _index(store: RemyVectorStore, docs: list[Any], **kwargs: Any) -> VectorStoreIndex:
    return VectorStoreIndex.from_documents(
        docs,
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=NoEmbedding(),
        **kwargs,
    )


@pytest.fixture
def engine(tmp_path: Path, embedder: Any) -> Iterator[Retriever]:
    with Retriever(tmp_path / "store", collection="li-store", embedder=embedder) as retriever:
        yield retriever


@pytest.fixture
def corpus_index(engine: Retriever) -> VectorStoreIndex:
    docs = SimpleDirectoryReader(str(CORPUS_DIR)).load_data()
    return _index(RemyVectorStore(engine), docs)


def _keys(nodes: list[Any]) -> list[tuple[str, int]]:
    return [(n.node.metadata["document_id"], n.node.metadata["chunk_index"]) for n in nodes]


@pytest.mark.parametrize(
    ("li_mode", "remy_mode"), [("default", "semantic"), ("sparse", "lexical"), ("hybrid", "hybrid")]
)
def test_modes_return_the_hits_of_retriever_search(
    corpus_index: VectorStoreIndex, engine: Retriever, li_mode: str, remy_mode: str
) -> None:
    retriever = corpus_index.as_retriever(vector_store_query_mode=li_mode, similarity_top_k=5)
    for query in QUERIES:
        nodes = retriever.retrieve(query)
        hits = engine.search(query, mode=remy_mode, k=5)
        assert nodes, query
        assert _keys(nodes) == [(h.citation.document_id, h.citation.chunk_index) for h in hits]
        assert [n.score for n in nodes] == pytest.approx([h.score for h in hits])


def test_hybrid_honours_alpha(corpus_index: VectorStoreIndex, engine: Retriever) -> None:
    store = corpus_index.vector_store
    for alpha in (0.0, 1.0):
        result = store.query(
            VectorStoreQuery(
                query_str=INSTALL_QUERY,
                similarity_top_k=5,
                mode=VectorStoreQueryMode.HYBRID,
                alpha=alpha,
            )
        )
        hits = engine.search(INSTALL_QUERY, mode="hybrid", k=5, alpha=alpha, fusion="convex")
        assert [n.metadata["chunk_index"] for n in result.nodes or []] == [
            h.citation.chunk_index for h in hits
        ]
        assert result.similarities == pytest.approx([h.score for h in hits])


def test_query_engine_cites_the_files(corpus_index: VectorStoreIndex) -> None:
    response = corpus_index.as_query_engine(llm=MockLLM(), similarity_top_k=3).query(INSTALL_QUERY)
    assert response.source_nodes
    top = response.source_nodes[0].node
    assert top.metadata["file_name"] == "install.md"
    assert top.metadata["citation"]["path"].endswith("install.md")
    assert top.metadata["source"].endswith("install.md")


def test_indexing_the_same_folder_twice_does_not_duplicate(
    corpus_index: VectorStoreIndex, engine: Retriever
) -> None:
    chunks, documents = engine.count(), engine.document_ids()
    assert all("@" in doc_id and doc_id.startswith(str(CORPUS_DIR)) for doc_id in documents)
    docs = SimpleDirectoryReader(str(CORPUS_DIR)).load_data()
    again = _index(RemyVectorStore(engine), docs)
    assert (engine.count(), engine.document_ids()) == (chunks, documents)
    top = again.as_retriever(similarity_top_k=1).retrieve(INSTALL_QUERY)[0].node
    assert top.metadata["file_name"] == "install.md"
    assert top.ref_doc_id in {doc.doc_id for doc in docs}  # the second load replaced the first


def test_insert_and_delete_ref_doc_reach_every_mode(
    corpus_index: VectorStoreIndex, engine: Retriever
) -> None:
    before = engine.count()
    doc = LIDocument(text="Zyxwv quokka telemetry rotates every fortnight.", metadata={"k": "v"})
    corpus_index.insert(doc)
    assert engine.count() == before + 1
    for mode in ("default", "sparse", "hybrid"):
        nodes = corpus_index.as_retriever(vector_store_query_mode=mode).retrieve("zyxwv quokka")
        assert nodes[0].node.ref_doc_id == doc.doc_id, mode
    corpus_index.delete_ref_doc(doc.doc_id)
    assert engine.count() == before
    for mode in ("semantic", "lexical", "hybrid"):
        hits = engine.search("zyxwv quokka telemetry fortnight", mode=mode, k=50)
        assert all(h.metadata.get("ref_doc_id") != doc.doc_id for h in hits), mode
    assert engine.search("zyxwv", mode="lexical") == []


def test_prev_next_postprocessor_returns_the_real_neighbours(engine: Retriever) -> None:
    docs = SimpleDirectoryReader(input_files=[str(CORPUS_DIR / "install.md")]).load_data()
    nodes = SentenceSplitter(chunk_size=64, chunk_overlap=0).get_nodes_from_documents(docs)
    assert len(nodes) >= 3
    store = RemyVectorStore(engine)
    index = VectorStoreIndex(
        nodes,
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=NoEmbedding(),
    )
    middle = nodes[1]
    found = index.as_retriever(vector_store_query_mode="sparse", similarity_top_k=1).retrieve(
        middle.get_content()
    )
    assert found[0].node.node_id == middle.node_id
    post = PrevNextNodePostprocessor(docstore=store.docstore(), num_nodes=1, mode="both")
    out = post.postprocess_nodes(found)
    assert {n.node.node_id for n in out} == {nodes[0].node_id, nodes[1].node_id, nodes[2].node_id}
    texts = {n.node.node_id: n.node.get_content() for n in out}
    assert texts[nodes[2].node_id] == nodes[2].get_content()
    source = (CORPUS_DIR / "install.md").read_text(encoding="utf-8")
    hit = found[0].node
    assert hit.start_char_idx == middle.start_char_idx
    assert source[hit.start_char_idx : hit.end_char_idx] == middle.get_content()


def _filter(key: str, op: FilterOperator, value: Any) -> MetadataFilters:
    return MetadataFilters(filters=[MetadataFilter(key=key, operator=op, value=value)])


@pytest.mark.parametrize(
    ("op", "value", "expected"),
    [
        (FilterOperator.EQ, 2, {"b"}),
        (FilterOperator.NE, 2, {"a", "c"}),
        (FilterOperator.GT, 1, {"b", "c"}),
        (FilterOperator.GTE, 2, {"b", "c"}),
        (FilterOperator.LT, 2, {"a"}),
        (FilterOperator.LTE, 2, {"a", "b"}),
        (FilterOperator.IN, [1, 3], {"a", "c"}),
        (FilterOperator.NIN, [1, 3], {"b"}),
    ],
)
def test_every_operator_with_an_equivalent_filters(
    engine: Retriever, op: FilterOperator, value: Any, expected: set[str]
) -> None:
    store = RemyVectorStore(engine)
    store.add(
        [
            TextNode(id_=key, text=f"shared words {key}", metadata={"n": n})
            for key, n in (("a", 1), ("b", 2), ("c", 3))
        ]
    )
    filters = _filter("n", op, value)
    assert {n.node_id for n in store.get_nodes(filters=filters)} == expected
    for mode in (
        VectorStoreQueryMode.DEFAULT,
        VectorStoreQueryMode.SPARSE,
        VectorStoreQueryMode.HYBRID,
    ):
        result = store.query(
            VectorStoreQuery(
                query_str="shared words", similarity_top_k=10, mode=mode, filters=filters
            )
        )
        assert set(result.ids or []) == expected, mode


def test_and_or_conditions_nest(engine: Retriever) -> None:
    store = RemyVectorStore(engine)
    store.add(
        [
            TextNode(id_=k, text=f"shared {k}", metadata={"n": n, "t": t})
            for k, n, t in (("a", 1, "x"), ("b", 2, "x"), ("c", 3, "y"))
        ]
    )
    inner = MetadataFilters(
        filters=[MetadataFilter(key="n", value=1), MetadataFilter(key="t", value="y")],
        condition=FilterCondition.OR,
    )
    both = MetadataFilters(
        filters=[inner, MetadataFilter(key="n", operator=FilterOperator.LT, value=3)],
        condition=FilterCondition.AND,
    )
    assert filters_to_where(both) == {
        "$and": [{"$or": [{"n": {"$eq": 1}}, {"t": {"$eq": "y"}}]}, {"n": {"$lt": 3}}]
    }
    assert {n.node_id for n in store.get_nodes(filters=both)} == {"a"}


@pytest.mark.parametrize(
    "op",
    [
        FilterOperator.TEXT_MATCH,
        FilterOperator.TEXT_MATCH_INSENSITIVE,
        FilterOperator.IS_EMPTY,
    ],
)
def test_operators_without_an_equivalent_are_refused(
    corpus_index: VectorStoreIndex, op: FilterOperator
) -> None:
    filters = _filter("file_name", op, ["install.md"])
    with pytest.raises(InvalidFilterError, match=op.name):
        corpus_index.as_retriever(filters=filters).retrieve(INSTALL_QUERY)
    with pytest.raises(
        InvalidFilterError, match="use one of EQ, NE, GT, GTE, LT, LTE, IN, NIN, CONTAINS, ANY, ALL"
    ):
        filters_to_where(filters)


def test_not_condition_is_refused() -> None:
    filters = MetadataFilters(
        filters=[MetadataFilter(key="a", value=1), MetadataFilter(key="b", value=2)],
        condition=FilterCondition.NOT,
    )
    with pytest.raises(InvalidFilterError, match="AND and OR"):
        filters_to_where(filters)


def test_metadata_rule_round_trips_and_filters(engine: Retriever) -> None:
    store = RemyVectorStore(engine)
    meta = {"languages": ["eng", "fra"], "gone": None, "loader": {"name": "x", "v": {"n": 2}}}
    store.add([TextNode(id_="m1", text="metadata rule", metadata=meta)])
    (node,) = store.get_nodes(node_ids=["m1"])
    assert node.metadata == meta  # nested dicts, lists and None come back as given
    stored = engine.get_documents(["m1"])["m1"].document.metadata
    assert stored["languages"] == ["eng", "fra"]  # a list of strings is stored as a list
    found = store.query(
        VectorStoreQuery(
            query_str="metadata rule", filters=_filter("languages", FilterOperator.CONTAINS, "fra")
        )
    )
    assert found.ids == ["m1"]
    missed = store.query(
        VectorStoreQuery(
            query_str="metadata rule", filters=_filter("languages", FilterOperator.CONTAINS, "fr")
        )
    )
    assert missed.ids == []  # an exact item, not a substring
    for op, values, ids in (
        (FilterOperator.ANY, ["deu", "fra"], ["m1"]),
        (FilterOperator.ALL, ["eng", "fra"], ["m1"]),
        (FilterOperator.ALL, ["eng", "deu"], []),
    ):
        query = VectorStoreQuery(
            query_str="metadata rule", filters=_filter("languages", op, values)
        )
        assert store.query(query).ids == ids, (op, values)
    hits = store.query(
        VectorStoreQuery(
            query_str="metadata rule", filters=_filter("loader.v.n", FilterOperator.EQ, 2)
        )
    )
    assert hits.ids == ["m1"]
    assert hits.nodes is not None and hits.nodes[0].metadata["languages"] == ["eng", "fra"]


def test_any_loader_metadata_is_stored_and_given_back(engine: Retriever) -> None:
    import datetime as dt

    store = RemyVectorStore(engine)
    meta = {"rows": [{"a": 1}, {"b": [2]}], "when": dt.date(2024, 1, 2), "tags": ("x",)}
    store.add([TextNode(id_="any", text="odd metadata", metadata=meta)])
    (node,) = store.get_nodes(node_ids=["any"])
    assert node.metadata == {"rows": [{"a": 1}, {"b": [2]}], "when": "2024-01-02", "tags": ["x"]}


def test_a_node_with_unstorable_metadata_stores_nothing(engine: Retriever) -> None:
    store = RemyVectorStore(engine)
    good = TextNode(id_="good", text="fine")
    bad = TextNode(id_="bad", text="not fine", metadata={"blob": "x" * 70_000})
    with pytest.raises(InvalidDocumentError, match=r"metadata\['blob'\]"):
        store.add([good, bad])
    assert engine.count() == 0


def test_clear_delete_nodes_and_async_variants(engine: Retriever) -> None:
    store = RemyVectorStore(engine)

    async def run() -> None:
        ids = await store.async_add(
            [TextNode(id_=f"n{i}", text=f"async node {i}", metadata={"i": i}) for i in range(4)]
        )
        assert ids == ["n0", "n1", "n2", "n3"]
        result = await store.aquery(VectorStoreQuery(query_str="async node", similarity_top_k=10))
        assert sorted(result.ids or []) == ids
        await store.adelete_nodes(["n0"])
        assert {n.node_id for n in await store.aget_nodes(ids)} == {"n1", "n2", "n3"}
        await store.adelete_nodes(filters=_filter("i", FilterOperator.GTE, 3))
        assert engine.document_ids() == ["n1", "n2"]
        await store.aclear()
        assert engine.count() == 0

    asyncio.run(run())
