"""The whole public API under hostile arguments: every call returns or raises a
:class:`RemyError` with a message, never another exception or a hang, and a rejected call
leaves the store as it was.

test_fuzz.py fuzzes queries, filters and documents; this covers the rest of the surface:
the ``Retriever`` constructor (paths, embedders, every keyword), every search option of
``search``/``rank``/``calibrated_search``/``search_documents`` (with broken rerankers),
the write and read calls, and ``MemoryStore``. Values come from remy_fuzz_values.py
(wrong types, None, bools as ints, NaN/inf, +-2**63 and beyond, NUL/control/surrogate
text, bytes, 100,000-deep trees, 100,000-long lists, reserved keys, random objects,
generators). The CLI is in test_fuzz_surface_cli.py. Deterministic (derandomized).
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from remy_fuzz_values import (
    BadEmbedder,
    Make,
    Unexpected,
    bad_embedders,
    deep_list,
    deep_where,
    either,
    expect,
    fuzz_settings,
    hostile,
    mostly,
    odd_text,
    outcome,
    perturbed,
    pick,
    real,
    rerankers,
    wheres,
)
from remy_reliability_support import MODES, TokenHashEmbedder, snapshot

from remy_retriever import (
    Document,
    DocumentSearchResponse,
    InvalidInputError,
    MemorySearchResponse,
    MemoryStore,
    RemyError,
    Retriever,
    SearchHit,
    SearchOptions,
)
from remy_retriever.util.retry import RetryPolicy

pytestmark = pytest.mark.timeout(900)


def _corpus() -> list[Document]:
    topics = ["install linux apt", "billing invoices refunds", "alerts cpu rules"]
    return [
        Document(
            id=f"doc{i}",
            text=f"# Doc {i}\n\n## Part\n\n{topics[i % 3]} number{i}\n\n" + "more text " * (i * 40),
            title=f"Doc {i}",
            metadata={"tenant": "ab"[i % 2], "year": 2000 + i, "score": i / 3, "flag": i % 2 == 0},
        )
        for i in range(12)
    ]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A scratch directory whose ``cwd/a/b`` is the working directory: relative and
    empty paths land there, never in the repository, and a relative ``../..`` (a fuzz
    value) is ``cwd``, inside this scratch directory. With ``root`` itself as the working
    directory, ``../..`` was pytest's base temp, every earlier run's files included: one
    ingest of it took four minutes and walked files the session's servers were writing."""
    path = tmp_path_factory.mktemp("surface")
    work = path / "cwd" / "a" / "b"
    work.mkdir(parents=True)
    before = Path.cwd()
    os.chdir(work)
    try:
        yield path
    finally:
        os.chdir(before)


@pytest.fixture(scope="module")
def store(root: Path) -> Iterator[Retriever]:
    r = Retriever(root / "db", collection="fuzz", embedder=TokenHashEmbedder())
    r.add(_corpus())
    yield r
    r.close()


@pytest.fixture(scope="module")
def baseline(store: Retriever) -> Any:
    return snapshot(store)


def _finite_scores(call: str, hits: list[SearchHit], example: Any) -> None:
    for h in hits:
        ok = isinstance(h.score, float) and math.isfinite(h.score)
        expect(ok, call, f"returned a hit with score {h.score!r}", example)


# -- search options -----------------------------------------------------------------------

queries = mostly(st.sampled_from(["install linux", "billing refunds", "alerts", "zzz"]))
valid_options: dict[str, st.SearchStrategy[Any]] = {
    "mode": st.sampled_from(MODES),
    "k": st.integers(1, 30),
    "where": st.sampled_from(
        [None, {"tenant": "a"}, {"$or": [{"tenant": "a"}, {"year": {"$gte": 2005}}]}]
    ),
    "candidates": st.integers(1, 200),
    "fusion": st.sampled_from(["rrf", "convex"]),
    "weights": st.fixed_dictionaries(
        {}, optional={"semantic": st.floats(0, 2), "lexical": st.floats(0, 2)}
    ),
    "rrf_k": st.floats(0, 100),
    "alpha": st.floats(0, 1),
    "rerank": st.sampled_from([None, False]),
    "rerank_depth": st.integers(1, 50),
    "min_score": st.floats(-1, 1),
    "explain": st.booleans(),
    "expand": st.integers(0, 3),
    "highlight": st.booleans(),
}
bad_options: dict[str, st.SearchStrategy[Any]] = {
    **dict.fromkeys(valid_options, hostile),
    "where": wheres,
    "rerank": pick((3, rerankers), (1, hostile)),
    "weights": st.one_of(
        st.dictionaries(
            st.sampled_from(["semantic", "lexical", "other"]), hostile, min_size=1, max_size=2
        ),
        hostile,
    ),
    "unknown_option": hostile,
}
options = perturbed(valid_options, bad_options)
RANK = ("mode", "candidates", "where", "fusion", "weights", "rrf_k", "alpha")
CALIBRATED = ("mode", "k", "where", "rerank", "candidates")
valid_document_options: dict[str, st.SearchStrategy[Any]] = {
    "limit": st.integers(1, 20),
    "chunk_threshold": st.floats(0, 1),
    "document_threshold": st.floats(0, 1),
    "only_matching_chunks": st.booleans(),
    "include_full_docs": st.booleans(),
    "include_summary": st.booleans(),
    "mode": st.sampled_from(MODES),
    "rerank": st.sampled_from([None, False]),
    "where": st.sampled_from([None, {"tenant": "b"}]),
    "context_chunks": st.integers(0, 3),
}
documents_options = perturbed(
    valid_document_options,
    {
        **dict.fromkeys(valid_document_options, hostile),
        "where": wheres,
        "rerank": pick((3, rerankers), (1, hostile)),
        "k": hostile,  # not an option of search_documents (limit is)
    },
)


@pytest.mark.slow
@fuzz_settings(max_examples=200)
@given(query=queries, opts=options, doc_opts=documents_options, as_object=st.booleans())
def test_every_search_option(
    store: Retriever,
    baseline: Any,
    query: Any,
    opts: dict[str, Any],
    doc_opts: dict[str, Any],
    as_object: bool,
) -> None:
    example = {"query": query, **opts}
    q = real(query)
    kw = {name: real(value) for name, value in opts.items()}
    k = kw.get("k", 10)
    if as_object:
        known = {n: v for n, v in kw.items() if n in SearchOptions.names()}  # a fixed signature
        built = outcome("SearchOptions(**opts)", lambda: SearchOptions(**known), example)
        if isinstance(built, SearchOptions):
            result = outcome("search(q, options)", lambda: store.search(q, built), example)
        else:  # hostile in the place of the options object
            k = 10
            result = outcome(
                "search(q, hostile)", lambda: store.search(q, kw.get("where")), example
            )
    else:
        result = outcome("search", lambda: store.search(q, **kw), example)
    if isinstance(result, list):
        expect(
            len(result) <= (k if isinstance(k, int) else 10), "search", "more than k hits", example
        )
        _finite_scores("search", result, example)
    ranked = outcome("rank", lambda: store.rank(q, **{n: kw[n] for n in RANK if n in kw}), example)
    if isinstance(ranked, list):
        expect(
            all(math.isfinite(s) for _, s in ranked),
            "rank",
            f"non-finite score {ranked[:3]}",
            example,
        )
    calibrated = outcome(
        "calibrated_search",
        lambda: store.calibrated_search(q, **{n: kw[n] for n in CALIBRATED if n in kw}),
        example,
    )
    if isinstance(calibrated, list):
        ok = all(0.0 <= c.relevance <= 1.0 for c in calibrated)
        expect(ok, "calibrated_search", "a relevance outside 0-1", example)
    dkw = {name: real(value) for name, value in doc_opts.items()}
    grouped = outcome(
        "search_documents", lambda: store.search_documents(q, **dkw), {"query": query, **doc_opts}
    )
    if isinstance(grouped, DocumentSearchResponse):
        ok = all(0.0 <= r.score <= 1.0 for r in grouped.results)
        expect(ok, "search_documents", "a score outside 0-1", doc_opts)
    expect(snapshot(store) == baseline, "search", "a search changed the store", example)


# -- the constructor ----------------------------------------------------------------------


def _paths(root: Path, existing: Path) -> st.SearchStrategy[Any]:
    regular = root / "regular-file"
    valid = st.sampled_from(
        [
            Make("<the existing store>", lambda: existing),
            Make("str(<the existing store>)", lambda: str(existing)),
            Make("<a fresh dir>", lambda: _fresh(root)),
        ]
    )
    return st.one_of(
        valid,
        valid,
        st.sampled_from(
            [
                Make("<a regular file>", lambda: _file(regular)),
                Make("<a regular file>/a/b/c", lambda: _file(regular) / "a" / "b" / "c"),
                Make("bytes(<a fresh dir>)", lambda: os.fsencode(_fresh(root))),
                Make("<a fresh dir>/a\\x00b", lambda: str(_fresh(root)) + "/a\x00b"),
                Make("<a fresh dir> + 'x'*5000", lambda: str(_fresh(root)) + "/" + "x" * 5000),
                Make("PathLike -> int", lambda: _pl(5)),
                Make("PathLike -> None", lambda: _pl(None)),
                Make("PathLike -> bytes", lambda: _pl(b"relative-bytes")),
                "/dev/null",
                "/dev/null/db",
                "/proc/self/status",
                "/proc/remy-fuzz-db",
                "/sys/remy-fuzz-db",
                "",
                ".",
                "\udcff-surrogate-name",
            ]
        ),
        hostile,
    )


def _fresh(root: Path) -> Path:
    import uuid  # lazy: only the fresh-path values need it

    return root / "fresh" / uuid.uuid4().hex / "deep" / "db"


def _file(path: Path) -> Path:
    path.write_text("not a store")
    return path


def _pl(value: Any) -> Any:
    from remy_fuzz_values import _PathLike  # lazy: a test helper, private to the values

    return _PathLike(value)


valid_ctor: dict[str, st.SearchStrategy[Any]] = {
    "collection": st.sampled_from(["fuzz", "other"]),
    "create": st.booleans(),
    "max_tokens": st.integers(16, 512),
    "lock_timeout": st.floats(0.1, 10),
    "retry": st.just(Make("RetryPolicy()", RetryPolicy)),
    "hnsw": st.sampled_from([None, {"ef_search": 50}]),
    "progress": st.sampled_from([None, False]),
}
ctor_values = perturbed(
    valid_ctor,
    {
        **dict.fromkeys([*valid_ctor, "lexical_path", "client"], hostile),
        "collection": either(st.sampled_from(["docs-remydocs", "a" * 600, "ab"])),
        "embedder": pick((3, bad_embedders), (1, hostile)),
        "reranker": either(rerankers),
        "hnsw": st.one_of(
            st.dictionaries(
                st.sampled_from(["ef_construction", "max_neighbors", "ef_search", "x"]),
                hostile,
                min_size=1,
                max_size=2,
            ),
            hostile,
        ),
    },
)


@pytest.fixture(scope="module")
def ctor_store(root: Path) -> Iterator[Retriever]:
    """The store the constructor fuzz opens (separate from ``store``: a wrong embedder
    accepted here could write vectors of its own)."""
    r = Retriever(root / "ctor-db", collection="fuzz", embedder=TokenHashEmbedder())
    r.add(_corpus()[:4])
    yield r
    r.close()


@pytest.mark.slow
@fuzz_settings(max_examples=150)
@given(data=st.data(), kwargs=ctor_values)
def test_every_constructor_keyword(
    root: Path, ctor_store: Retriever, data: st.DataObject, kwargs: dict[str, Any]
) -> None:
    ctor_root = root / "ctor"
    ctor_root.mkdir(exist_ok=True)
    raw_path = data.draw(_paths(ctor_root, root / "ctor-db"), label="path")
    if (
        isinstance(raw_path, Make)
        and raw_path.label.endswith("store>")
        and kwargs.get("collection") == "other"
    ):
        kwargs = {**kwargs, "collection": "fuzz"}  # open the store that has data
    path = real(raw_path)
    kw = {name: real(value) for name, value in kwargs.items()}
    kw.setdefault("embedder", TokenHashEmbedder())
    before = snapshot(ctor_store)
    example = {"path": raw_path, **kwargs}
    opened = outcome("Retriever(...)", lambda: Retriever(path, **kw), example)
    if isinstance(opened, (RemyError, Unexpected)):
        if isinstance(path, Path) and "fresh" in path.parts:
            expect(not path.exists(), "Retriever(...)", f"rejected, but created {path}", example)
    else:
        _exercise(opened, example)
        opened.close()
    expect(snapshot(ctor_store) == before, "Retriever(...)", "the existing store changed", example)


def _exercise(r: Retriever, example: Any) -> None:
    """What a user does next with a retriever that opened: each call works or raises a
    RemyError, and whatever it added is deleted again."""
    outcome("Retriever.max_tokens", lambda: r.max_tokens, example)
    outcome("Retriever.count", r.count, example)
    for mode in MODES:
        hits = outcome(
            f"search(mode={mode})",
            lambda mode=mode: r.search("install linux", mode=mode, k=3),
            example,
        )
        if isinstance(hits, list):
            _finite_scores(f"search(mode={mode})", hits, example)
    added = outcome(
        "add", lambda: r.add([Document(id="fz-ctor", text="# New\n\ninstall linux fresh")]), example
    )
    if not isinstance(added, (RemyError, Unexpected)):
        for mode in MODES:
            outcome(
                f"search after add (mode={mode})",
                lambda mode=mode: r.search("fresh", mode=mode, k=3),
                example,
            )
        outcome("delete", lambda: r.delete(["fz-ctor"]), example)


# -- writes and reads ---------------------------------------------------------------------

doc_ids = pick((2, st.from_regex(r"fz[a-z0-9]{1,6}", fullmatch=True)), (1, odd_text), (1, hostile))
metadatas = st.one_of(
    st.dictionaries(
        st.one_of(
            st.sampled_from(["tenant", "year", "remy_x", "$and", "#x", "memory_latest"]), odd_text
        ),
        hostile,
        max_size=3,
    ),
    hostile,
)
valid_document = {
    "id": st.from_regex(r"fz[a-z0-9]{1,6}", fullmatch=True),
    "text": st.text(max_size=200),
    "metadata": st.dictionaries(
        st.sampled_from(["tenant", "year", "note"]),
        st.one_of(
            st.integers(-(2**62), 2**62), st.floats(-1e6, 1e6), st.text(max_size=5), st.booleans()
        ),
        max_size=3,
    ),
    "title": st.none() | st.text(max_size=10),
    "url": st.none(),
    "summary": st.none(),
}
documents = perturbed(
    valid_document,
    {
        **dict.fromkeys(valid_document, hostile),
        "id": doc_ids,
        "metadata": metadatas,
        "text": either(odd_text),
    },
    most=1,
).map(lambda fields: {"id": Make("'fz-missing'", lambda: "fz-missing"), "text": "", **fields})
batches = mostly(st.lists(mostly(documents), max_size=4))
ingest_paths = st.one_of(
    st.sampled_from(
        [
            "/dev/null",
            "/proc/self/status",
            "/proc/self/fd",
            "/nonexistent/a/b",
            "",
            "a\x00b",
            "\udcff.md",
        ]
    ),
    hostile,
)


@pytest.mark.slow
@fuzz_settings(max_examples=150)
@given(
    batch=batches,
    add_kw=perturbed(
        {"batch_size": st.integers(1, 300), "progress": st.booleans()},
        {"batch_size": hostile, "progress": hostile},
        most=1,
    ),
    targets=mostly(st.lists(doc_ids, max_size=3)),
    where=wheres,
    ingest_path=ingest_paths,
    ingest_kw=perturbed(
        {"progress": st.booleans()}, {"metadata": metadatas, "progress": hostile}, most=1
    ),
)
def test_every_write_and_read_call(
    store: Retriever,
    baseline: Any,
    batch: Any,
    add_kw: dict[str, Any],
    targets: Any,
    where: Any,
    ingest_path: Any,
    ingest_kw: dict[str, Any],
) -> None:
    built: Any = real(batch)
    if isinstance(built, list):
        built = [
            (
                outcome("Document(...)", lambda item=item: Document(**item), item)
                if _is_fields(item)
                else item
            )
            for item in built
        ]
        built = [d for d in built if not isinstance(d, (RemyError, Unexpected))]
        if any(isinstance(d, Document) and d.id.startswith("doc") for d in built):
            return  # keep the shared corpus intact
    example = {"batch": batch, **add_kw}
    report = outcome(
        "add", lambda: store.add(built, **{n: real(v) for n, v in add_kw.items()}), example
    )
    if not isinstance(report, (RemyError, Unexpected)):
        added = [d.id for d in built if isinstance(d, Document)] if isinstance(built, list) else []
        for mode in MODES:
            hits = outcome(
                f"search after add (mode={mode})",
                lambda mode=mode: store.search("install", mode=mode, k=20),
                example,
            )
            if isinstance(hits, list):
                _finite_scores("search after add", hits, example)
        assert outcome("delete(added)", lambda: store.delete(added), example) is not None
    expect(snapshot(store) == baseline, "add", "left the store changed", example)
    ids = real(targets)
    if isinstance(ids, list) and any(isinstance(i, str) and i.startswith("doc") for i in ids):
        ids = [i for i in ids if not (isinstance(i, str) and i.startswith("doc"))]
    for name, call in (
        ("get_documents", lambda: store.get_documents(ids)),
        ("get_chunks", lambda: store.get_chunks(ids, where=real(where))),
        ("delete", lambda: store.delete(ids)),
        ("document_ids", lambda: store.document_ids(real(where))),
        (
            "ingest",
            lambda: store.ingest(real(ingest_path), **{n: real(v) for n, v in ingest_kw.items()}),
        ),
        ("doctor", lambda: store.doctor(repair=real(targets))),
    ):
        result = outcome(
            name, call, {"ids": targets, "where": where, "path": ingest_path, **ingest_kw}
        )
        if name == "delete":
            ok = result == 0 or isinstance(result, (RemyError, Unexpected))
            expect(ok, "delete", f"removed {result!r} chunks of unknown ids", targets)
        if name == "ingest" and not isinstance(result, (RemyError, Unexpected)):
            store.delete([*result.added, *result.updated])  # a real file was ingested
    expect(
        snapshot(store) == baseline,
        "reads",
        "a read, a delete of unknown ids or a rejected ingest changed the store",
        targets,
    )


def _is_fields(item: Any) -> bool:
    return isinstance(item, dict) and "id" in item and "text" in item


# -- MemoryStore --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def memories(root: Path, store: Retriever) -> Iterator[tuple[MemoryStore, list[str]]]:
    m = MemoryStore(
        root / "db", embedder=TokenHashEmbedder(), retriever=store, collection="mem-fuzz"
    )
    seeded = [
        m.add(f"memory {i} about install and billing", container_tag="t", metadata={"n": i}).id
        for i in range(3)
    ]
    yield m, seeded
    m.close()


memory_ops = st.sampled_from(
    ["add", "add_many", "update", "extend", "derive", "forget", "get", "history", "search"]
)
valid_memory_kw: dict[str, st.SearchStrategy[Any]] = {
    "metadata": st.sampled_from([None, {"n": 1}]),
    "container_tag": st.sampled_from(["t", "u"]),
    "document_ids": st.lists(st.sampled_from(["doc1", "doc2"]), max_size=2),
    "search_mode": st.sampled_from(["memories", "hybrid", "documents"]),
    "limit": st.integers(1, 20),
    "threshold": st.floats(0, 1),
    "include": st.sampled_from([{"relatedMemories"}, {"documents": True}, None]),
    "where": st.sampled_from([None, {"n": 1}]),
    "rerank": st.sampled_from([None, False]),
    "mode": st.sampled_from(MODES),
}
memory_kw = perturbed(
    valid_memory_kw,
    {
        **dict.fromkeys(valid_memory_kw, hostile),
        "where": wheres,
        "metadata": metadatas,
        "rerank": pick((3, rerankers), (1, hostile)),
    },
    most=1,
)
_TAKES = {
    "add": ("metadata", "container_tag", "document_ids"),
    "add_many": ("metadata", "container_tag", "document_ids"),
    "update": ("metadata", "document_ids"),
    "extend": ("metadata", "document_ids"),
    "derive": ("metadata", "document_ids"),
    "search": (
        "search_mode",
        "limit",
        "threshold",
        "include",
        "container_tag",
        "where",
        "rerank",
        "mode",
    ),
}


@pytest.mark.slow
@fuzz_settings(max_examples=120)
@given(
    op=memory_ops,
    target=mostly(st.integers(0, 2)),
    content=mostly(st.sampled_from(["a new fact about install", "billing"])),
    kw=memory_kw,
)
def test_every_memory_store_call(
    memories: tuple[MemoryStore, list[str]], op: str, target: Any, content: Any, kw: dict[str, Any]
) -> None:
    m, seeded = memories
    ident = (
        seeded[target]
        if isinstance(target, int) and not isinstance(target, bool) and 0 <= target < 3
        else real(target)
    )
    text = real(content)
    args = {n: real(v) for n, v in kw.items() if n in _TAKES.get(op, ())}
    calls = {
        "add": lambda: m.add(text, **args),
        "add_many": lambda: m.add_many(
            [text, "a second fact"],
            metadata=[args.get("metadata"), None],
            container_tags=[args.get("container_tag"), None],
            document_ids=[args.get("document_ids"), None],
        ),
        "update": lambda: m.update(ident, text, **args),
        "extend": lambda: m.extend(ident, text, **args),
        "derive": lambda: m.derive([ident] if isinstance(target, int) else ident, text, **args),
        "forget": lambda: m.forget(ident),
        "get": lambda: m.get(ident),
        "history": lambda: m.history(ident),
        "search": lambda: m.search(text, **args),
    }
    before = snapshot(m.memories)
    example = {"op": op, "target": target, "content": content, **kw}
    result = outcome(f"MemoryStore.{op}", calls[op], example)
    if isinstance(result, (RemyError, Unexpected)) or op in ("get", "history", "search"):
        expect(snapshot(m.memories) == before, f"MemoryStore.{op}", "changed the store", example)
    if isinstance(result, MemorySearchResponse):
        ok = all(0.0 <= r.similarity <= 1.0 for r in result.results)
        expect(ok, "MemoryStore.search", "a similarity outside 0-1", example)


# -- hostile shapes that break stores: each on a store of its own -------------------------


@pytest.mark.parametrize(
    "metadata",
    [
        Make("8,000 string keys", lambda: {f"k{i}": "v" for i in range(8000)}),
        Make("10,000 int keys", lambda: {f"k{i}": i for i in range(10_000)}),
        Make("one 10 MB value", lambda: {"k": "v" * 10_000_000}),
        Make("a 100,000-character key", lambda: {"k" * 100_000: 1}),
    ],
    ids=repr,
)
@pytest.mark.parametrize("via", ["Retriever.add", "MemoryStore.add"])
def test_huge_metadata_is_rejected_or_stored_and_the_store_reopens(
    tmp_path: Path, metadata: Make, via: str
) -> None:
    path = tmp_path / "db"
    r = Retriever(path, collection="fuzz", embedder=TokenHashEmbedder())
    r.add(_corpus()[:3])
    m = MemoryStore(path, embedder=TokenHashEmbedder(), collection="mem")
    meta = real(metadata)
    if via == "Retriever.add":
        outcome(via, lambda: r.add([Document(id="bomb", text="x", metadata=meta)]), metadata)
    else:
        outcome(via, lambda: m.add("x", metadata=meta), metadata)
    r.close()
    m.close()
    again = outcome(
        "reopen", lambda: Retriever(path, collection="fuzz", embedder=TokenHashEmbedder()), metadata
    )
    assert isinstance(again, Retriever), f"the store no longer opens: {again!r}"
    for mode in MODES:
        assert again.search("install", mode=mode, k=3), mode
    assert outcome(
        "MemoryStore reopen",
        lambda: MemoryStore(path, embedder=TokenHashEmbedder(), collection="mem").search("x"),
        metadata,
    )
    again.close()


def test_a_100000_deep_where_in_every_call(
    store: Retriever, baseline: Any, memories: tuple[MemoryStore, list[str]]
) -> None:
    deep = deep_where(100_000)
    m, _ = memories
    calls = {
        "search": lambda: store.search("install", where=deep),
        "rank": lambda: store.rank("install", where=deep),
        "calibrated_search": lambda: store.calibrated_search("install", where=deep),
        "search_documents": lambda: store.search_documents("install", where=deep),
        "document_ids": lambda: store.document_ids(deep),
        "SearchOptions": lambda: SearchOptions(where=deep),
        "MemoryStore.search": lambda: m.search("install", where=deep),
    }
    for name, call in calls.items():
        outcome(name, call, "deep_where(100_000)")
    assert snapshot(store) == baseline


# -- regressions: what this fuzz found in code no other item covers ----------------------


class _BrokenQueries(TokenHashEmbedder):
    """Embeds documents well and queries badly (``kind`` as in BadEmbedder)."""

    def __init__(self, kind: str = "nan") -> None:
        super().__init__()
        self.bad = BadEmbedder(kind)

    def embed_query(self, text: str) -> Any:
        return self.bad.embed_query(text)


@pytest.mark.parametrize(
    "kind", ["none", "nan", "inf", "strings", "generator", "2d-query", "empty", "scalar"]
)
def test_a_query_embedder_returning_junk_is_a_remy_error(tmp_path: Path, kind: str) -> None:
    """embed_query returning None, NaN, text, a generator or a matrix: a RemyError (at
    open or at search), never a TypeError/ValueError or hits ranked by NaN."""
    path = tmp_path / "db"
    with Retriever(path, collection="qqq", embedder=TokenHashEmbedder()) as r:
        r.add([Document(id="a", text="install linux")])
    for mode in ("semantic", "hybrid"):
        with pytest.raises(RemyError, match="embed"):
            Retriever(path, collection="qqq", embedder=_BrokenQueries(kind)).search(
                "install", mode=mode
            )


def test_search_documents_rejects_unknown_options(store: Retriever) -> None:
    with pytest.raises(InvalidInputError, match=r"unknown option.*'k'.*limit"):
        store.search_documents("install", k=5)


def test_extend_and_derive_reject_ids_that_are_not_strings(
    memories: tuple[MemoryStore, list[str]],
) -> None:
    m, seeded = memories
    before = snapshot(m.memories)
    with pytest.raises(InvalidInputError, match="memory id must be a non-empty str"):
        m.extend([seeded[0]], "more")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="memory id must be a non-empty str"):
        m.derive([seeded[0], [seeded[1]]], "drawn")  # type: ignore[list-item]
    assert snapshot(m.memories) == before


@pytest.mark.parametrize("name", ["chunk_threshold", "document_threshold", "include_full_docs"])
def test_search_documents_names_a_deeply_nested_value_without_recursing(
    store: Retriever, name: str
) -> None:
    with pytest.raises(InvalidInputError, match=rf"{name} must be .*got \[\[\[\["):
        store.search_documents("install", **{name: deep_list(100_000)})
