"""LangChain documents in: loader + splitter output into remy through ``RemyVectorStore``.

Run it with ``python examples/langchain_vectorstore.py [DATA_DIR]`` (needs the
``langchain-remy`` package with its ``loaders`` extra, for LangChain's loader and
splitter: ``pip install -e 'integrations/langchain-remy[loaders]'``; ``make venv``
installs it; offline). It loads the bundled
corpus in ``examples/corpus/`` with LangChain's ``DirectoryLoader``, splits it with
``RecursiveCharacterTextSplitter(add_start_index=True)`` and indexes the chunks with
``langchain_core.indexing.index`` (a record manager, incremental cleanup) into a
``RemyVectorStore`` in ``DATA_DIR`` (default: a fresh temporary directory). It indexes
twice, to show the second run skips everything, then runs ``similarity_search`` and the
store's hybrid retriever, printing each result's citation (the source file).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from langchain_community.document_loaders import DirectoryLoader, TextLoader
from langchain_core.documents import Document
from langchain_core.indexing import InMemoryRecordManager, index
from langchain_remy import RemyVectorStore
from langchain_text_splitters import RecursiveCharacterTextSplitter

CORPUS = Path(__file__).resolve().parent / "corpus"
QUESTION = "how do I install remy on linux"


def load_chunks() -> list[Document]:
    """The corpus as LangChain loads and splits it."""
    docs = DirectoryLoader(str(CORPUS), glob="*.md", loader_cls=TextLoader).load()
    splitter = RecursiveCharacterTextSplitter(
        chunk_size=500, chunk_overlap=50, add_start_index=True
    )
    return splitter.split_documents(docs)


def main(data_dir: Path) -> None:
    store = RemyVectorStore(path=data_dir, collection="lc-vectorstore")
    manager = InMemoryRecordManager(namespace="remy/lc-vectorstore")
    manager.create_schema()
    try:
        for run in ("first", "second"):
            result = index(
                load_chunks(),
                manager,
                store,
                cleanup="incremental",
                source_id_key="source",
                key_encoder="sha256",
            )
            print(
                f"{run} index(): added {result['num_added']}, skipped {result['num_skipped']}, "
                f"deleted {result['num_deleted']}; remy holds {store.retriever.count()} chunks"
            )
        print(f"\nsimilarity_search({QUESTION!r}):")
        for doc, score in store.similarity_search_with_score(QUESTION, k=2):
            first_line = doc.page_content.strip().splitlines()[0]
            print(f"  {score:.3f}  {doc.metadata['source']}  {first_line[:60]!r}")
        print("\nas_retriever() (hybrid, cited):")
        for n, doc in enumerate(store.as_retriever(search_kwargs={"k": 3}).invoke(QUESTION), 1):
            citation = doc.metadata["citation"]
            print(f"  [{n}] source: {citation['path']} (start_index {doc.metadata['start_index']})")
    finally:
        store.retriever.close()


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp))
