"""LangChain RAG chain: remy retriever -> prompt with numbered citations -> chat model.

Run it with ``python examples/langchain_rag_chain.py [DATA_DIR]`` (needs the
``langchain-remy`` package, which ``make venv`` installs). It ingests the bundled corpus in
``examples/corpus/`` into an embedded Chroma store in ``DATA_DIR`` (default: a fresh
temporary directory; an existing store is reused, unchanged files are skipped), then runs
an LCEL chain: ``RemyRetriever`` finds cited passages, ``format_documents`` numbers them
as ``[1] title > section (source)`` in the prompt, and a chat model answers citing those
numbers. The script prints the answer and the sources behind each number.

Offline, the chat model is LangChain's deterministic ``FakeListChatModel`` with a canned
answer. To use a real model, change the one line in :func:`chat_model`, e.g.
``return ChatOpenAI(model="gpt-4o-mini")`` (after ``pip install langchain-openai``).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel, FakeListChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import Runnable, RunnablePassthrough
from langchain_remy import RemyRetriever, format_documents

from remy_retriever import Retriever

CORPUS = Path(__file__).resolve().parent / "corpus"
QUESTION = "How do I install remy on Linux?"

PROMPT = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            "Answer the question using only the numbered sources below. Cite every claim "
            "with the source number in brackets, like [1]. If the sources do not contain "
            "the answer, say so.\n\nSources:\n{context}",
        ),
        ("human", "{question}"),
    ]
)


def chat_model() -> BaseChatModel:
    """The chat model. Offline: a deterministic fake that gives one canned answer."""
    return FakeListChatModel(
        responses=[
            "On Debian or Ubuntu, install the packaged command-line tool with "
            "`sudo apt install remy-cli` [1]. On other distributions, install the "
            "library with pip inside a virtual environment [1]."
        ]
    )


def build_chain(retriever: RemyRetriever, model: BaseChatModel) -> Runnable[str, dict[str, Any]]:
    """question -> {"question", "docs", "answer"}: the documents are kept in the output so
    the caller can show the citations behind the answer's [n] numbers."""
    answer = (
        {
            "context": lambda state: format_documents(state["docs"]),
            "question": lambda state: state["question"],
        }
        | PROMPT
        | model
        | StrOutputParser()
    )
    return {"question": RunnablePassthrough(), "docs": retriever} | RunnablePassthrough.assign(
        answer=answer
    )


def render_sources(docs: list[Document]) -> str:
    lines = []
    for number, doc in enumerate(docs, start=1):
        meta = doc.metadata
        section = " > ".join(meta["heading_path"]) or meta["document_id"]
        citation = meta["citation"]
        lines.append(
            f"  [{number}] {section}\n"
            f"      source: {meta['source']} (chunk {meta['chunk_index']}, "
            f"chars {citation['start']}-{citation['end']}, score {meta['score']:.4f})"
        )
    return "\n".join(lines)


def main(data_dir: str) -> None:
    with Retriever(data_dir, collection="examples") as engine:
        engine.ingest(CORPUS)
        retriever = RemyRetriever(engine, k=3)
        chain = build_chain(retriever, chat_model())
        result = chain.invoke(QUESTION)
        print(f"question: {result['question']}\n")
        print(f"answer: {result['answer']}\n")
        print("sources:")
        print(render_sources(result["docs"]))


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory(prefix="remy-langchain-") as tmp:
            main(tmp)
