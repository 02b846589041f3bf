"""LlamaIndex documents into remy: ``RemyVectorStore`` under a ``VectorStoreIndex``.

Run it with ``python examples/llamaindex_vectorstore.py [DATA_DIR]`` (needs the
``llama-index-retrievers-remy`` package, which ``make venv`` installs). Offline: remy embeds
with the bundled all-MiniLM-L6-v2 and the LLM is ``MockLLM``. It loads the bundled corpus
with LlamaIndex's ``SimpleDirectoryReader``, indexes it twice (the second time replaces,
it does not duplicate: file-loaded nodes are keyed by file path and offset), asks a
question in hybrid mode through a query engine and prints the cited source nodes, then
follows one hit's neighbours with ``PrevNextNodePostprocessor`` over ``store.docstore()``
and deletes a document with ``delete_ref_doc``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from llama_index.core import SimpleDirectoryReader, StorageContext, VectorStoreIndex
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.postprocessor import PrevNextNodePostprocessor
from llama_index.vector_stores.remy import NoEmbedding, RemyVectorStore

from remy_retriever import Retriever

CORPUS = Path(__file__).resolve().parent / "corpus"
QUESTION = "How do I install remy on Linux?"


def build_index(store: RemyVectorStore) -> VectorStoreIndex:
    """Load the corpus with LlamaIndex's reader and index it into the remy store."""
    documents = SimpleDirectoryReader(str(CORPUS)).load_data()
    return VectorStoreIndex.from_documents(
        documents,
        storage_context=StorageContext.from_defaults(vector_store=store),
        embed_model=NoEmbedding(),  # remy embeds the text itself
        # nodes within remy's chunk size (store.client.max_tokens) stay one remy chunk each,
        # so hits are the splitter's nodes and PrevNextNodePostprocessor can follow them
        transformations=[SentenceSplitter(chunk_size=160, chunk_overlap=0)],
    )


def main(data_dir: Path) -> None:
    engine = Retriever(data_dir, collection="llamaindex-docs")
    store = RemyVectorStore(engine)
    build_index(store)
    first = engine.count()
    index = build_index(store)
    print(f"indexed {first} chunks; after indexing again: {engine.count()} chunks")

    engine_q = index.as_query_engine(
        llm=MockLLM(), vector_store_query_mode="hybrid", similarity_top_k=3
    )
    response = engine_q.query(QUESTION)
    print(f"\nQ: {QUESTION}")
    for source in response.source_nodes:
        meta = source.node.metadata
        print(f"  {source.score:.4f} {meta['file_name']} {meta['heading_path']}")

    top = response.source_nodes[:1]
    neighbours = PrevNextNodePostprocessor(docstore=store.docstore(), num_nodes=1, mode="both")
    around = neighbours.postprocess_nodes(top)
    print(f"\nthe top hit with its neighbours: {len(around)} nodes")
    for node in around:
        print(f"  {node.node.get_content()[:60]!r}")

    ref_doc_id = top[0].node.ref_doc_id
    assert ref_doc_id is not None
    before = engine.count()
    index.delete_ref_doc(ref_doc_id)
    print(f"\ndeleted {top[0].node.metadata['file_name']}: {before} -> {engine.count()} chunks")
    engine.close()


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp))
