"""RemyDocumentStore, the live docstore of RemyRetriever.docstore() and
RemyVectorStore.docstore(): PrevNextNodePostprocessor follows PREVIOUS / NEXT for any remy
node, however it was written, sees writes made after the docstore was created, refuses
writes, stays inside the retriever's filter, and holds nothing (memory does not grow with
the store). Real Chroma; real MiniLM except for the 1,000-node store."""

from __future__ import annotations

import hashlib
import tracemalloc
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.postprocessor import PrevNextNodePostprocessor
from llama_index.core.schema import Document as LIDocument
from llama_index.core.schema import NodeRelationship, NodeWithScore, TextNode
from llama_index.core.storage.docstore.types import BaseDocumentStore
from llama_index.core.vector_stores.types import VectorStoreQuery
from llama_index.retrievers.remy import RemyDocumentStore, RemyRetriever
from llama_index.vector_stores.remy import NoEmbedding, RemyVectorStore

from remy_retriever import InvalidInputError, RemyError, Retriever
from remy_retriever.integration import chunk_id

from .conftest import INSTALL_QUERY


def _middle(nodes: list[NodeWithScore]) -> NodeWithScore:
    """The best node that has both a PREVIOUS and a NEXT."""
    for node in nodes:
        relations = node.node.relationships
        if NodeRelationship.PREVIOUS in relations and NodeRelationship.NEXT in relations:
            return node
    msg = f"no node with both neighbours among {[n.node_id for n in nodes]}"
    raise AssertionError(msg)


def _neighbour_texts(engine: Retriever, query: str, chunk: str) -> tuple[str, str]:
    """The texts before and after ``chunk``, as remy's own ``expand=1`` gives them."""
    (hit,) = [h for h in engine.search(query, k=10, expand=1) if h.id == chunk]
    assert hit.neighbors is not None
    (before,), (after,) = hit.neighbors["before"], hit.neighbors["after"]
    return before, after


def _follow(docstore: BaseDocumentStore, node: NodeWithScore, n: int = 1) -> dict[str, str]:
    post = PrevNextNodePostprocessor(docstore=docstore, num_nodes=n, mode="both")
    return {out.node.node_id: out.node.get_content() for out in post.postprocess_nodes([node])}


def test_prev_next_returns_the_real_neighbours_of_a_retriever_node_over_an_ingested_folder(
    corpus_retriever: Retriever,
) -> None:
    retriever = RemyRetriever(corpus_retriever, similarity_top_k=4)
    hit = _middle(retriever.retrieve(INSTALL_QUERY))
    relations = hit.node.relationships
    previous = relations[NodeRelationship.PREVIOUS].node_id
    following = relations[NodeRelationship.NEXT].node_id
    before, after = _neighbour_texts(corpus_retriever, INSTALL_QUERY, hit.node.node_id)
    found = _follow(retriever.docstore(), hit)
    assert found == {
        previous: before,
        hit.node.node_id: hit.node.get_content(),
        following: after,
    }


def test_two_steps_walk_through_the_neighbours_relationships(corpus_retriever: Retriever) -> None:
    retriever = RemyRetriever(corpus_retriever, similarity_top_k=4)
    hit = _middle(retriever.retrieve(INSTALL_QUERY))
    citation = hit.node.metadata["citation"]
    doc, position, count = citation["documentId"], citation["chunkIndex"], citation["chunkCount"]
    stored = corpus_retriever.get_chunks([chunk_id(doc, i) for i in range(count)])
    wanted = range(max(0, position - 2), min(count, position + 3))
    expected = {chunk_id(doc, i): stored[chunk_id(doc, i)].text for i in wanted}
    assert _follow(retriever.docstore(), hit, n=2) == expected


def test_a_docstore_node_is_the_node_the_retriever_makes(corpus_retriever: Retriever) -> None:
    retriever = RemyRetriever(corpus_retriever, similarity_top_k=1)
    (hit,) = retriever.retrieve(INSTALL_QUERY)
    node = retriever.docstore().get_node(hit.node.node_id)
    assert node.get_content() == hit.node.get_content()
    assert node.relationships == hit.node.relationships
    assert (node.start_char_idx, node.end_char_idx) == (
        hit.node.start_char_idx,
        hit.node.end_char_idx,
    )
    expected = {k: v for k, v in hit.node.metadata.items() if k != "score"}
    assert {k: v for k, v in node.metadata.items() if k != "score"} == expected
    assert node.metadata["score"] is None  # not a search result


def test_prev_next_returns_the_real_neighbours_of_a_vector_store_node_over_an_ingested_folder(
    corpus_retriever: Retriever,
) -> None:
    store = RemyVectorStore(corpus_retriever)
    index = VectorStoreIndex.from_vector_store(store, embed_model=NoEmbedding())
    hit = _middle(index.as_retriever(similarity_top_k=4).retrieve(INSTALL_QUERY))
    relations = hit.node.relationships
    before, after = _neighbour_texts(corpus_retriever, INSTALL_QUERY, hit.node.node_id)
    assert _follow(store.docstore(), hit) == {
        relations[NodeRelationship.PREVIOUS].node_id: before,
        hit.node.node_id: hit.node.get_content(),
        relations[NodeRelationship.NEXT].node_id: after,
    }


def _split_text() -> str:
    return "\n\n".join(
        f"Section {i}. The {word} service keeps its logs under /var/log/{word} and rotates "
        f"them weekly; restart {word} after changing its configuration file."
        for i, word in enumerate(["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"])
    )


def test_the_vector_store_docstore_sees_nodes_written_after_it_was_made(
    tmp_path: Path, embedder: Any
) -> None:
    store = RemyVectorStore(Retriever(tmp_path, collection="later", embedder=embedder))
    docstore = store.docstore()  # before anything is written
    index = VectorStoreIndex.from_documents(
        [LIDocument(text=_split_text(), id_="ops-guide")],
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=NoEmbedding(),
        transformations=[SentenceSplitter(chunk_size=40, chunk_overlap=0)],
    )
    nodes = store.get_nodes()
    assert len(nodes) >= 3
    hit = _middle(index.as_retriever(similarity_top_k=len(nodes)).retrieve("charlie logs"))
    by_id = {node.node_id: node.get_content() for node in nodes}
    relations = hit.node.relationships
    previous = relations[NodeRelationship.PREVIOUS].node_id
    following = relations[NodeRelationship.NEXT].node_id
    assert _follow(docstore, hit) == {
        previous: by_id[previous],
        hit.node.node_id: by_id[hit.node.node_id],
        following: by_id[following],
    }


def test_chunks_remy_cut_from_a_vector_store_node_link_to_each_other(
    tmp_path: Path, embedder: Any
) -> None:
    engine = Retriever(tmp_path, collection="whole", embedder=embedder, max_tokens=40)
    store = RemyVectorStore(engine)
    store.add([TextNode(id_="ops-whole", text=_split_text())])  # no splitter: remy chunks it
    count = engine.count()
    assert count >= 3
    result = store.query(
        VectorStoreQuery(query_str="charlie logs", similarity_top_k=count, mode="sparse")
    )
    hits = [
        NodeWithScore(node=node, score=score)
        for node, score in zip(result.nodes or [], result.similarities or [])
    ]
    hit = _middle(hits)
    relations = hit.node.relationships
    stored = engine.get_chunks(
        [relations[NodeRelationship.PREVIOUS].node_id, relations[NodeRelationship.NEXT].node_id]
    )
    assert len(stored) == 2
    expected = {cid: chunk.text for cid, chunk in stored.items()}
    expected[hit.node.node_id] = hit.node.get_content()
    assert _follow(store.docstore(), hit) == expected


def test_the_retriever_docstore_sees_an_ingest_made_after_it_and_its_changes(
    tmp_path: Path, embedder: Any
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    engine = Retriever(tmp_path / "db", collection="later", embedder=embedder, max_tokens=40)
    retriever = RemyRetriever(engine, similarity_top_k=6, mode="lexical")
    docstore = retriever.docstore()
    page = folder / "ops.md"
    page.write_text("# Ops\n\n" + _split_text(), encoding="utf-8")
    engine.ingest(folder)
    hit = _middle(retriever.retrieve("charlie logs"))
    following = hit.node.relationships[NodeRelationship.NEXT].node_id
    assert (
        docstore.get_node(following).get_content() == engine.get_chunks([following])[following].text
    )
    page.write_text("# Ops\n\n" + _split_text().replace("weekly", "hourly"), encoding="utf-8")
    engine.ingest(folder)
    assert "hourly" in docstore.get_node(following).get_content()
    engine.delete(["ops.md"])
    assert not docstore.document_exists(following)
    with pytest.raises(ValueError, match="not found"):
        docstore.get_node(following)


def test_the_docstore_reads_only_inside_the_retrievers_filter(tenant_retriever: Retriever) -> None:
    retriever = RemyRetriever(tenant_retriever, where={"tenant": "a"})
    docstore = retriever.docstore()
    assert docstore.document_exists("a-install#0")
    assert not docstore.document_exists("b-install#0")
    with pytest.raises(InvalidInputError, match="not found"):
        docstore.get_document("b-install#0")
    assert docstore.get_ref_doc_info("b-install") is None
    assert docstore.get_nodes(["a-install#0", "b-install#0"], raise_error=False)[0].node_id == (
        "a-install#0"
    )
    assert set(docstore.docs) == {f"a-{key}#0" for key in ("alerts", "billing", "install")}
    assert len(docstore.docs) == 3
    assert "b-alerts#0" not in docstore.docs


def test_ref_doc_info_lists_a_documents_nodes_in_order(corpus_retriever: Retriever) -> None:
    docstore = RemyRetriever(corpus_retriever).docstore()
    info = docstore.get_ref_doc_info("install.md")
    assert info is not None
    count = len(info.node_ids)
    assert count > 2
    assert info.node_ids == [chunk_id("install.md", i) for i in range(count)]
    assert docstore.get_ref_doc_info("no-such-document") is None


_WRITES: list[tuple[str, Callable[[RemyDocumentStore], Any]]] = [
    ("add_documents", lambda d: d.add_documents([TextNode(text="x")])),
    ("delete_document", lambda d: d.delete_document("install.md#0")),
    ("delete_ref_doc", lambda d: d.delete_ref_doc("install.md")),
    ("set_document_hash", lambda d: d.set_document_hash("install.md", "h")),
    ("set_document_hashes", lambda d: d.set_document_hashes({"install.md": "h"})),
]


@pytest.mark.parametrize(("method", "call"), _WRITES, ids=[name for name, _ in _WRITES])
def test_every_write_is_refused_with_how_to_write_instead(
    corpus_retriever: Retriever, method: str, call: Callable[[RemyDocumentStore], Any]
) -> None:
    docstore = RemyRetriever(corpus_retriever).docstore()
    before = corpus_retriever.count()
    with pytest.raises(RemyError, match=rf"{method}\(\) refused.*read-only.*Retriever.add"):
        call(docstore)
    assert corpus_retriever.count() == before
    assert docstore.document_exists("install.md#0")


async def test_async_writes_are_refused_and_async_reads_work(corpus_retriever: Retriever) -> None:
    docstore = RemyRetriever(corpus_retriever).docstore()
    with pytest.raises(InvalidInputError, match="read-only"):
        await docstore.async_add_documents([TextNode(text="x")])
    with pytest.raises(InvalidInputError, match="read-only"):
        await docstore.adelete_ref_doc("install.md")
    node = await docstore.aget_document("install.md#1")
    assert node is not None
    assert node.relationships[NodeRelationship.PREVIOUS].node_id == "install.md#0"
    assert await docstore.adocument_exists("install.md#0")


def test_an_index_built_on_the_docstore_is_refused_before_anything_is_written(
    tmp_path: Path, embedder: Any
) -> None:
    store = RemyVectorStore(Retriever(tmp_path, collection="refused", embedder=embedder))
    context = StorageContext.from_defaults(vector_store=store, docstore=store.docstore())
    with pytest.raises(InvalidInputError, match="read-only"):
        VectorStoreIndex.from_documents(
            [LIDocument(text="text", id_="d")], storage_context=context, embed_model=NoEmbedding()
        )
    assert store.client.count() == 0


def test_a_bad_filter_or_engine_fails_when_the_docstore_is_made(
    corpus_retriever: Retriever,
) -> None:
    with pytest.raises(InvalidInputError, match="Retriever"):
        RemyDocumentStore("./remy_data")  # type: ignore[arg-type]
    with pytest.raises(RemyError, match=r"\$near"):
        RemyDocumentStore(corpus_retriever, where={"tenant": {"$near": 1}})


# -- memory does not grow with the store ------------------------------------------------


class _HashEmbedder:
    """A cheap deterministic embedder (the 1,000-node store only): a unit vector from the
    text's blake2b digest."""

    model_id = "test/blake2b-16"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.embed_query(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        raw = np.frombuffer(hashlib.blake2b(text.encode()).digest(), dtype=np.uint8)
        vector = raw[:16].astype(np.float32) + 1.0
        return vector / np.linalg.norm(vector)


def _store(root: Path, n: int) -> Retriever:
    """``n`` nodes written through the vector store, one remy chunk each."""
    engine = Retriever(root, collection=f"n{n}", embedder=_HashEmbedder())
    RemyVectorStore(engine).add(
        [TextNode(id_=f"note-{i:04d}", text=f"Note {i} reads gauge {i * 7}.") for i in range(n)]
    )
    assert engine.count() == n
    return engine


def _peak(make: Callable[[], BaseDocumentStore], node_id: str) -> int:
    make().get_node(node_id)  # warm: lazy imports and caches are not the docstore's
    tracemalloc.start()
    try:
        docstore = make()
        docstore.get_node(node_id)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    ("make", "suffix"),
    [
        (lambda engine: RemyRetriever(engine).docstore(), "#0"),  # chunk ids
        (lambda engine: RemyVectorStore(engine).docstore(), ""),  # node ids
    ],
    ids=["retriever", "vector_store"],
)
def test_making_a_docstore_and_a_lookup_take_no_more_memory_in_a_bigger_store(
    tmp_path: Path, make: Callable[[Retriever], BaseDocumentStore], suffix: str
) -> None:
    small, big = _store(tmp_path / "small", 10), _store(tmp_path / "big", 1000)
    small_peak = _peak(lambda: make(small), "note-0005" + suffix)
    big_peak = _peak(lambda: make(big), "note-0500" + suffix)
    # A copy of every node costs far more than this margin at 1,000 nodes.
    assert big_peak < small_peak * 1.5 + 100_000, (small_peak, big_peak)
