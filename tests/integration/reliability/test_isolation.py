"""Tenant isolation, property-based, with the real MiniLM model: with
``where={"tenant": X}`` no result, in any mode, with reranking (a seeded cross-encoder),
explain, neighbours or highlights, ever shows another tenant's chunk -- also after
documents move between tenants, and when the lexical index is stale. The same for
``rank()``, document-grouped search and memory search. (The LangChain and LlamaIndex
adapters pass the filter through; their own tests check that.)"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import chromadb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from remy_reliability_support import MODES, dense_records

from remy_retriever import (
    CrossEncoderReranker,
    Document,
    Retriever,
    SearchHit,
    SentenceTransformerEmbedder,
)

TENANTS = ("acme", "globex", "initech")
VOCAB = [
    "invoice",
    "refund",
    "billing",
    "password",
    "reset",
    "login",
    "install",
    "linux",
    "agent",
    "alert",
    "cpu",
    "disk",
    "backup",
    "restore",
    "quota",
    "limit",
    "export",
    "report",
    "dashboard",
    "token",
    "secret",
    "salary",
    "contract",
    "merger",
]
_counter = itertools.count()


class CachedQueries(SentenceTransformerEmbedder):
    """The real MiniLM model, embedding each distinct query once (the tests repeat a
    query across tenants, modes and options; isolation, not the model, is under test)."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self._model = model
        self._queries: dict[str, Any] = {}

    def embed_query(self, text: str) -> Any:
        if text not in self._queries:
            self._queries[text] = super().embed_query(text)
        return self._queries[text]


@pytest.fixture(scope="module")
def cached_embedder(minilm_model: Any) -> CachedQueries:
    return CachedQueries(minilm_model)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return chromadb.PersistentClient(path=str(tmp_path_factory.mktemp("iso") / "db"))


@pytest.fixture(scope="module")
def reranker(cross_encoder_path: str) -> CrossEncoderReranker:
    return CrossEncoderReranker(cross_encoder_path)


@pytest.fixture
def make(
    client: Any, cached_embedder: CachedQueries, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    opened: list[Retriever] = []
    base = tmp_path_factory.mktemp("iso-lex")

    def build(docs: list[Document]) -> Retriever:
        n = next(_counter)
        r = Retriever(
            client=client,
            collection=f"iso{n}",
            embedder=cached_embedder,
            lexical_path=base / f"lex{n}",
            max_tokens=40,  # several chunks per document: neighbours to leak
        )
        r.add(docs)
        opened.append(r)
        return r

    yield build
    for r in opened:
        r.close()


sentences = st.lists(st.sampled_from(VOCAB), min_size=3, max_size=14).map(" ".join)
documents = st.lists(
    st.tuples(st.sampled_from(TENANTS), st.lists(sentences, min_size=1, max_size=4)),
    min_size=2,
    max_size=9,
)
queries = st.one_of(
    st.lists(st.sampled_from(VOCAB), min_size=1, max_size=4).map(" ".join),
    st.sampled_from(["secret salary of acme", "globex merger contract", "initech password"]),
)


def _docs(spec: list[tuple[str, list[str]]]) -> list[Document]:
    return [
        Document(
            id=f"d{i}",
            text=f"# Doc {i}\n\n" + "\n\n".join(f"## S{j}\n\n{s}." for j, s in enumerate(parts)),
            metadata={"tenant": tenant, "tier": i % 3},
        )
        for i, (tenant, parts) in enumerate(spec)
    ]


def _check(r: Retriever, hits: list[SearchHit], tenant: str, owners: dict[str, str]) -> None:
    """Every hit, and every neighbour it carries, belongs to ``tenant``."""
    texts = {cid: meta for cid, meta in dense_records(r).items()}
    for hit in hits:
        assert hit.metadata.get("tenant") == tenant, (hit.id, hit.metadata, tenant)
        assert owners[hit.citation.document_id] == tenant, (hit.id, tenant)
        assert texts[hit.id]["tenant"] == tenant
        if hit.neighbors is not None:
            mine = {
                rec_text
                for _, rec_text, meta in r._sync.dense.get(
                    where={"remy_doc_id": hit.citation.document_id}
                )
                if meta.get("tenant") == tenant
            }
            for text in (*hit.neighbors["before"], *hit.neighbors["after"]):
                assert text in mine, f"neighbour of {hit.id} is not {tenant}'s"
        for match in hit.matches or ():
            assert hit.text[match.start : match.end] == match.token


@pytest.mark.timeout(900)
@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(spec=documents, query=queries, moves=st.lists(st.integers(0, 8), max_size=2))
def test_tenant_filter_never_leaks(
    make: Any, reranker: CrossEncoderReranker, spec: Any, query: str, moves: list[int]
) -> None:
    docs = _docs(spec)
    r = make(docs)
    owners = {d.id: str(d.metadata["tenant"]) for d in docs}
    # Move some documents to another tenant (same text): the old tenant must lose them.
    for i in moves:
        if i < len(docs):
            old = docs[i]
            tenant = TENANTS[(TENANTS.index(owners[old.id]) + 1) % len(TENANTS)]
            r.add([Document(id=old.id, text=old.text, metadata={**old.metadata, "tenant": tenant})])
            owners[old.id] = tenant
    for tenant in TENANTS:
        for mode in MODES:
            for options in (
                {},
                {"explain": True, "expand": 1, "highlight": True},
                {"rerank": reranker, "rerank_depth": 10, "explain": True, "expand": 2},
            ):
                hits = r.search(query, mode=mode, k=6, where={"tenant": tenant}, **options)
                _check(r, hits, tenant, owners)
            compound = {"$and": [{"tenant": tenant}, {"tier": {"$in": [0, 1, 2]}}]}
            _check(r, r.search(query, mode=mode, k=6, where=compound, expand=1), tenant, owners)
            # The default fills in both branches' scores; "lexical" skips the dense fill-in read.
            for fill in ("lexical", "both", "none"):
                ranked = r.rank(query, mode=mode, where={"tenant": tenant}, fill=fill)
                assert all(owners[cid.rsplit("#", 1)[0]] == tenant for cid, _ in ranked)
        # Unfiltered search may return anything; the filtered one is a subset of it.
        everyone = {h.id for h in r.search(query, mode="lexical", k=50)}
        mine = {h.id for h in r.search(query, mode="lexical", k=50, where={"tenant": tenant})}
        assert mine <= everyone


@pytest.mark.timeout(300)
def test_stale_lexical_entries_are_rechecked_against_chroma(make: Any) -> None:
    """A chunk whose tenant changed in Chroma behind the lexical index's back (another
    writer, not yet caught up) is never returned under its old tenant, not even as a
    neighbour of a chunk of the same document."""
    parts = ["secret salary contract", "merger dashboard report", "quota limit export"]
    docs = _docs([("acme", parts), ("globex", ["merger contract"])])
    r = make(docs)
    victim = "d0#0"
    assert {"d0#0", "d0#1", "d0#2"} <= set(dense_records(r))
    # Behind our back: change the tenant in Chroma only (the lexical index still says acme).
    record = r._sync.dense.get(ids=[victim])[0]
    r._sync.dense.collection.update(ids=[victim], metadatas=[{**record[2], "tenant": "globex"}])
    assert victim in {cid for cid, _ in r._sync.lexical.search("salary", 5, None)}
    for mode in MODES:
        for query in ("secret salary", "merger dashboard report"):
            for options in ({}, {"expand": 2}, {"explain": True, "highlight": True}):
                hits = r.search(query, mode=mode, k=5, where={"tenant": "acme"}, **options)
                assert victim not in {h.id for h in hits}, (mode, options)
                for h in hits:
                    assert h.metadata["tenant"] == "acme"
                    for text in (h.neighbors or {}).get("before", ()):
                        assert "salary" not in text, (
                            f"the moved chunk leaked as a neighbour of {h.id}"
                        )


@pytest.mark.timeout(600)
@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(spec=documents, query=queries)
def test_document_search_never_leaks(make: Any, spec: Any, query: str) -> None:
    search_documents = Retriever.search_documents

    docs = _docs(spec)
    r = make(docs)
    owners = {d.id: str(d.metadata["tenant"]) for d in docs}
    texts = {d.id: d.text for d in docs}
    for tenant in TENANTS:
        for mode in MODES:
            response = search_documents(
                r,
                query,
                mode=mode,
                where={"tenant": tenant},
                include_full_docs=True,
                include_summary=True,
                context_chunks=2,
            )
            for result in response.results:
                doc_id = result.document_id
                assert owners[doc_id] == tenant, (doc_id, tenant)
                assert (result.metadata or {}).get("tenant") == tenant
                assert result.content == texts[doc_id]
                for chunk in result.chunks:  # retrieved and context chunks alike
                    assert chunk.content.split("\n\n", 1)[-1] in texts[doc_id]


def test_isolation_fixture_corpus_has_every_tenant() -> None:
    spec = [(t, ["a b c"]) for t in TENANTS]
    assert {d.metadata["tenant"] for d in _docs(spec)} == set(TENANTS)


memory_specs = st.lists(
    st.tuples(st.sampled_from(TENANTS), sentences, st.sampled_from(["add", "update", "extend"])),
    min_size=3,
    max_size=8,
)


@pytest.mark.timeout(600)
@settings(
    max_examples=5,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(spec=documents, memories=memory_specs, query=queries)
def test_memory_search_never_leaks(
    make: Any,
    client: Any,
    cached_embedder: CachedQueries,
    tmp_path_factory: pytest.TempPathFactory,
    spec: Any,
    memories: Any,
    query: str,
) -> None:
    from remy_retriever.memory import MemoryStore

    docs = [
        Document(
            id=d.id, text=d.text, metadata={**d.metadata, "container_tag": d.metadata["tenant"]}
        )
        for d in _docs(spec)
    ]
    r = make(docs)
    by_tenant = {t: [d.id for d in docs if d.metadata["tenant"] == t] for t in TENANTS}
    store = MemoryStore(
        client,
        collection=f"mem{next(_counter)}",
        embedder=cached_embedder,
        lexical_path=tmp_path_factory.mktemp("mem-lex"),
        retriever=r,
    )
    latest: dict[str, list[str]] = {t: [] for t in TENANTS}
    for tenant, text, action in memories:
        linked = by_tenant[tenant][:1]
        if action != "add" and latest[tenant]:
            target = latest[tenant].pop()
            if action == "update":
                made = store.update(target, text)
            else:
                latest[tenant].append(target)
                made = store.extend(target, text)
        else:
            made = store.add(
                text, container_tag=tenant, metadata={"tenant": tenant}, document_ids=linked
            )
        latest[tenant].append(made.id)
    try:
        for tenant in TENANTS:
            for search_mode in ("memories", "hybrid", "documents"):
                for filters in ({"container_tag": tenant}, {"where": {"tenant": tenant}}):
                    response = store.search(
                        query,
                        search_mode=search_mode,  # type: ignore[arg-type]
                        include={"relatedMemories", "documents"},
                        limit=20,
                        **filters,  # type: ignore[arg-type]
                    )
                    for result in response.results:
                        assert (result.metadata or {}).get("tenant") == tenant, (result, tenant)
                        context = result.context
                        related = [*context.parents, *context.children] if context else []
                        for item in related:
                            assert (item.metadata or {}).get("tenant") == tenant, item
                        for doc in result.documents or []:
                            assert (doc.metadata or {}).get("tenant") == tenant, doc
    finally:
        store.close()
