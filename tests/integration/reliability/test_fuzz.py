"""Bad input, fuzzed: every input to the public API and the CLI either works or raises a
documented :class:`RemyError` subclass with a message; never another exception, a hang,
or a change to the stored data."""

from __future__ import annotations

import contextlib
import io
import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from remy_fuzz_values import bounded
from remy_reliability_support import MODES, TokenHashEmbedder, check_whole_documents, snapshot

from remy_retriever import (
    Document,
    InvalidDocumentError,
    InvalidFilterError,
    InvalidInputError,
    InvalidQueryError,
    RemyError,
    Retriever,
)
from remy_retriever.cli import main as cli_main
from remy_retriever.text.analysis import MAX_QUERY_TERMS, analyze_query

T = TypeVar("T")
FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# -- helpers ------------------------------------------------------------------------------


def works_or_remy_error(fn: Callable[[], T]) -> T | RemyError:
    """The call's result, or the RemyError it raised (with a real message); any other
    exception fails the test."""
    try:
        return bounded(fn)
    except RemyError as exc:
        assert len(str(exc)) > 15, f"uninformative message {exc!r}"
        return exc


def _corpus() -> list[Document]:
    topics = ["install linux apt", "billing invoices refunds", "alerts cpu rules"]
    return [
        Document(
            id=f"doc{i}",
            text=f"# Doc {i}\n\n## Part\n\n{topics[i % 3]} number{i} (see [link](x)) AND/OR *",
            metadata={"tenant": "ab"[i % 2], "year": 2000 + i, "score": i / 3, "flag": i % 2 == 0},
        )
        for i in range(12)
    ]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Retriever]:
    r = Retriever(
        tmp_path_factory.mktemp("fuzz") / "db", collection="fuzz", embedder=TokenHashEmbedder()
    )
    r.add(_corpus())
    yield r
    r.close()


@pytest.fixture(scope="module")
def baseline(store: Retriever) -> Any:
    return snapshot(store)


# -- strategies ---------------------------------------------------------------------------

SYNTAX = [
    'title:foo AND (bar OR "baz")~2^3',
    "*:*",
    "field:",
    "NOT",
    "a AND",
    "+-!&|",
    "[a TO b] {c TO d}",
    '"unclosed',
    "\\",
    "foo* ?ar ~ ^2",
    "SELECT * FROM docs; --",
    'MATCH "x" NEAR/3',
    "$and $or $eq",
    "((((",
    "))))",
    "%s %n %x",
    "../../etc/passwd",
    "<script>alert(1)</script>",
]
lone_surrogates = st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1)
control = st.text(st.characters(max_codepoint=0x1F), min_size=1)
queries = st.one_of(
    st.text(),
    st.text(st.characters(codec=None), max_size=50),
    st.builds(lambda a, b, c: a + b + c, st.text(max_size=5), lone_surrogates, st.text(max_size=5)),
    control,
    st.sampled_from(SYNTAX),
    st.sampled_from(["\x00", "a\x00b", " ", "\t\n\r\x0b\x0c", "\u200b", "\u2028", "\ufeff"]),
    st.sampled_from(
        ["🦜🔥 emoji 👩‍👩‍👧", "مرحبا بالعالم install", "שלום עולם", "\u202eevil\u202c"]
    ),
    st.integers(1, 2000).map(lambda n: "(" * n + "install" + ")" * n),
    st.none(),
    st.integers(),
    st.binary(max_size=20),
    st.lists(st.text(max_size=5), max_size=3),
)
scalars = st.one_of(
    st.text(max_size=8),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.binary(max_size=4),
    lone_surrogates,
)
keys = st.one_of(
    st.sampled_from(["tenant", "year", "score", "flag", "missing", "remy_doc_id"]),
    st.sampled_from(["$and", "$or", "$not", "$eq", "", "remy_pos", "#x", "a.b"]),
    st.text(max_size=6),
)
operators = st.sampled_from(["$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte", "$bad"])


def _where_tree(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.dictionaries(keys, children, max_size=3),
        st.lists(children, max_size=3),
        st.dictionaries(operators, st.one_of(scalars, st.lists(scalars, max_size=3)), max_size=2),
    )


wheres = st.one_of(
    st.none(),
    st.recursive(st.one_of(scalars, st.lists(scalars, max_size=3)), _where_tree, max_leaves=12),
    st.integers(1, 400).map(lambda n: _nested(n)),
    st.just({"tenant": "a"}),
    st.just({"$or": [{"tenant": "a"}, {"year": {"$gte": 2005}}]}),
)
ks = st.one_of(
    st.integers(-(10**12), 10**12),
    st.sampled_from([0, 1, -1, 10_000, 10_001, 2**63]),
    st.floats(),
    st.booleans(),
    st.text(max_size=3),
    st.none(),
)
modes = st.one_of(st.sampled_from([*MODES, "HYBRID", "bm25", "", "dense"]), st.text(max_size=8))


def _nested(depth: int) -> dict[str, Any]:
    where: dict[str, Any] = {"tenant": "a"}
    for _ in range(depth):
        where = {"$and": [where]}
    return where


# -- the public API -----------------------------------------------------------------------


@pytest.mark.timeout(600)
@FUZZ
@given(query=queries, mode=modes, k=ks, where=wheres, extras=st.booleans())
def test_search_never_crashes_hangs_or_writes(
    store: Retriever, baseline: Any, query: Any, mode: Any, k: Any, where: Any, extras: bool
) -> None:
    result = works_or_remy_error(
        lambda: store.search(
            query, mode=mode, k=k, where=where, explain=extras, highlight=extras, expand=extras
        )
    )
    if isinstance(result, RemyError):
        assert isinstance(result, (InvalidQueryError, InvalidFilterError, InvalidInputError)), repr(
            result
        )
    else:
        assert isinstance(result, list) and len(result) <= k
    ranked = works_or_remy_error(lambda: store.rank(query, mode=mode, where=where))
    assert isinstance(ranked, (list, InvalidInputError)), repr(ranked)
    assert snapshot(store) == baseline


@pytest.mark.timeout(300)
@FUZZ
@given(
    ids=st.lists(st.one_of(st.text(max_size=10), lone_surrogates, st.integers(), st.none())),
    as_str=st.booleans(),
)
def test_delete_and_get_documents_of_unknown_ids_change_nothing(
    store: Retriever, baseline: Any, ids: list[Any], as_str: bool
) -> None:
    wanted = [i for i in ids if not (isinstance(i, str) and i.startswith("doc"))]
    target: Any = (wanted[0] if wanted else "x") if as_str else wanted
    works_or_remy_error(lambda: store.get_documents(target))
    removed = works_or_remy_error(lambda: store.delete(target))
    assert removed == 0 or isinstance(removed, RemyError)
    assert snapshot(store) == baseline


texts = st.one_of(
    st.text(),
    st.just(""),
    st.sampled_from(["   \n\t ", "\x00binary\x00", "# \n## \n###", "```\n# not a heading\n"]),
    st.builds(lambda a, b: a + b, st.text(max_size=20), lone_surrogates),
    control,
    st.text(st.characters(codec=None), max_size=300),
    st.binary(max_size=30),
    st.integers(1, 30).map(lambda n: "word " * (n * 400)),
)
metadatas = st.dictionaries(keys, scalars, max_size=3)
documents = st.builds(
    lambda i, t, m, title: (i, t, m, title),
    st.one_of(st.from_regex(r"fz[a-z0-9]{1,6}", fullmatch=True), st.text(max_size=8)),
    texts,
    metadatas,
    st.one_of(st.none(), st.text(max_size=10), lone_surrogates),
)


@pytest.mark.timeout(900)
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(batch=st.lists(documents, max_size=4))
def test_add_works_whole_or_is_rejected_untouched(
    store: Retriever, baseline: Any, batch: list[Any]
) -> None:
    built: list[Document] = []
    for doc_id, text, meta, title in batch:
        try:
            built.append(Document(id=doc_id, text=text, metadata=meta, title=title))
        except RemyError as exc:  # rejected at construction: fine, a documented error
            assert isinstance(exc, InvalidDocumentError), repr(exc)
    if any(d.id.startswith("doc") for d in built):
        return  # keep the shared corpus intact
    result = works_or_remy_error(lambda: store.add(built))
    if isinstance(result, RemyError):
        assert isinstance(result, (InvalidDocumentError, InvalidInputError)), repr(result)
        assert snapshot(store) == baseline, "a rejected add() changed the store"
        return
    try:
        check_whole_documents(store)
        stored = store.get_documents([d.id for d in built])
        assert set(stored) == {d.id for d in built}
        for d in built:
            assert stored[d.id].document.text == d.text
    finally:
        store.delete([d.id for d in built])
    assert snapshot(store) == baseline


@pytest.mark.timeout(300)
def test_ingest_with_a_non_utf8_file_stores_nothing(
    store: Retriever, baseline: Any, tmp_path: Path
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nfine text")
    (folder / "latin1.md").write_bytes("# Caf\xe9\n\nna\xefve".encode("latin-1"))
    # Named directly, a bad file is an error (in a folder it fails alone and is reported:
    # tests/integration/test_ingest_files.py).
    with pytest.raises(InvalidDocumentError, match=r"latin1\.md.*not UTF-8"):
        store.ingest(folder / "latin1.md")
    (folder / "binary.txt").write_bytes(b"\x00\x01\x02binary\x00")
    with pytest.raises(InvalidDocumentError, match=r"binary\.txt.*NUL"):
        store.ingest(folder / "binary.txt")
    assert snapshot(store) == baseline
    with pytest.raises(InvalidDocumentError, match="no such file"):
        store.ingest(tmp_path / "missing")


@pytest.mark.timeout(300)
def test_duplicate_and_huge_documents(store: Retriever, baseline: Any) -> None:
    doc = Document(id="fzdup", text="one")
    with pytest.raises(InvalidDocumentError, match="twice"):
        store.add([doc, Document(id="fzdup", text="two")])
    assert snapshot(store) == baseline
    huge = Document(id="fzhuge", text="# Huge\n\n" + "lorem ipsum dolor sit amet. " * 40_000)
    report = bounded(lambda: store.add([huge]))
    assert report.chunks_written > 100
    assert check_whole_documents(store)["fzhuge"] == report.chunks_written
    for mode in MODES:
        assert store.search("lorem ipsum", mode=mode, k=3)  # type: ignore[arg-type]
    store.delete(["fzhuge"])
    assert snapshot(store) == baseline


class _SpyEmbedder(TokenHashEmbedder):
    """Records the longest text it was asked to embed as a query."""

    longest = 0

    def embed_query(self, text: str) -> Any:
        type(self).longest = max(type(self).longest, len(text))
        return super().embed_query(text)


@pytest.mark.timeout(300)
def test_a_100k_character_query_is_bounded_work_in_every_mode(tmp_path: Path) -> None:
    """A 100,000-character query works in every mode, with explain, highlight and
    neighbours, and the work it causes is bounded: the model sees its first 4,000
    characters and the lexical branch at most MAX_QUERY_TERMS distinct terms. (How fast
    that is belongs to benchmarks, not to a timed test.)"""
    r = Retriever(tmp_path / "db", collection="long-q", embedder=_SpyEmbedder())
    r.add(_corpus())
    words = [f"w{i}" for i in range(20_000)]
    query = ("install the agent on linux " + " ".join(words) + " ")[:100_000]
    assert len(query) == 100_000
    for mode in MODES:
        hits = bounded(
            lambda m=mode: r.search(query, mode=m, k=5, explain=True, highlight=True, expand=1)  # type: ignore[misc]
        )
        assert hits, mode
    assert _SpyEmbedder.longest == 4000
    assert len(analyze_query(query)) <= MAX_QUERY_TERMS
    r.close()


@pytest.mark.timeout(300)
def test_long_and_odd_queries_with_the_real_model(tmp_path: Path, embedder: Any) -> None:
    """The real tokenizer rejects lone surrogates; a 100k-character query, 10k nested
    parentheses and control characters work in every mode."""
    r = Retriever(tmp_path / "db", collection="odd-q", embedder=embedder)
    r.add(_corpus())
    odd = [
        ("install the agent on linux " * 4000)[:100_000],
        "(" * 10_000 + "install" + ")" * 10_000,
        "install \ud800 linux \udfff",
        "billing\x01\x02\x1b[31m refunds",
        "🦜 مرحبا install שלום \u202e",
    ]
    for query in odd:
        for mode in MODES:
            hits = r.search(query, mode=mode, k=3, explain=True, highlight=True)  # type: ignore[arg-type]
            assert isinstance(hits, list)
    reranked = r.search("install \ud800 linux", k=3, rerank=_Scorer())
    assert reranked
    r.close()


class _Scorer:
    """A reranker that, like real tokenizers, rejects lone surrogates."""

    def score(self, query: str, texts: Any) -> list[float]:
        query.encode("utf-8")
        return [1.0 / (1 + i) for i, _ in enumerate(texts)]


# -- the CLI ------------------------------------------------------------------------------


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = bounded(lambda: cli_main(argv))
        except SystemExit as exc:  # argparse rejects bad flags/values with exit 2
            code = int(exc.code) if isinstance(exc.code, int) else 2
    return code, out.getvalue(), err.getvalue()


cli_text = st.one_of(queries.filter(lambda q: isinstance(q, str) and "\x00" not in q), st.text())


@pytest.mark.timeout(600)
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    query=cli_text,
    mode=st.one_of(st.sampled_from(MODES), st.text(max_size=6)),
    k=st.one_of(st.integers(-5, 20_000).map(str), st.text(max_size=4)),
    where=st.one_of(
        st.none(),
        st.text(max_size=20),
        wheres.map(lambda w: json.dumps(w, default=repr, allow_nan=True)),
    ),
    flags=st.lists(st.sampled_from(["--explain", "--highlight", "--json", "--expand=1"])),
)
def test_cli_search_never_crashes(
    store: Retriever,
    baseline: Any,
    query: str,
    mode: str,
    k: str,
    where: str | None,
    flags: list[str],
) -> None:
    db = str(Path(store._sync.dense.client.get_settings().persist_directory))
    argv = ["search", query, "--db", db, "--collection", "fuzz", "--mode", mode, "--k", k, *flags]
    if where is not None:
        argv += ["--where", where]
    code, out, err = _cli(argv)
    assert code in (0, 2), (code, err[-500:])
    if code == 2:
        assert err.strip(), "an error exit must explain itself on stderr"
        assert "Traceback" not in err
    elif "--json" in flags:
        assert isinstance(json.loads(out), list)
    assert snapshot(store) == baseline


@pytest.mark.timeout(300)
def test_cli_ingest_rejects_bad_files_and_stores_nothing(
    store: Retriever, baseline: Any, tmp_path: Path
) -> None:
    db = str(Path(store._sync.dense.client.get_settings().persist_directory))
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "ok.md").write_text("# OK\n\nfine")
    (folder / "bad.md").write_bytes(b"\xff\xfe\xfa not utf-8")
    # The fuzz store records a custom embedder: the CLI refuses it (a store never
    # chooses code to run) and changes nothing.
    code, _, err = _cli(["ingest", str(folder / "bad.md"), "--db", db, "--collection", "fuzz"])
    assert code == 2 and "--embedder" in err, err
    assert snapshot(store) == baseline
    # A store of the default model: the bad file is refused by name, nothing is stored.
    fresh = tmp_path / "fresh"
    code, _, err = _cli(["ingest", str(folder / "bad.md"), "--db", str(fresh)])
    assert code == 1 and "bad.md" in err and "UTF-8" in err, err  # a file failed
    try:
        with Retriever(fresh, create=False) as reopened:
            assert reopened.count() == 0
    except RemyError:
        pass  # nothing was created at all
    code, _, err = _cli(["search", "x", "--db", str(tmp_path / "nowhere"), "--collection", "zzz"])
    assert code == 2 and "does not exist" in err


def test_float_k_and_nan_where_are_rejected_clearly(store: Retriever) -> None:
    with pytest.raises(InvalidInputError, match="k must be an int"):
        store.search("install", k=2.0)  # type: ignore[arg-type]
    with pytest.raises(InvalidFilterError, match="not a finite number"):
        store.search("install", where={"score": {"$gt": math.nan}})
    with pytest.raises(InvalidFilterError, match="surrogate"):
        store.search("install", where={"tenant": "a\ud800"})
    with pytest.raises(InvalidInputError, match="unknown mode"):
        store.search("install", mode="bm25")  # type: ignore[arg-type]
