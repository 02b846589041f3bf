"""Hostile values for the surface fuzz tests (test_fuzz_surface*.py): hypothesis
strategies, broken embedders and rerankers, and the one check every call goes through.

A value that must be built fresh for each call (a generator, a 100,000-deep tree, a
10 MB string) is drawn as a :class:`Make`, whose repr is a short label, so hypothesis can
print a failing example; :func:`real` builds it.

Set ``REMY_FUZZ_FINDINGS=/path/findings.jsonl`` to record unexpected exceptions there
instead of failing (one JSON line each: call, exception, message, example): a survey
mode for listing every distinct failure at once. Normal runs fail on the first one.
"""

from __future__ import annotations

import fractions
import json
import math
import os
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from decimal import Decimal
from typing import Any, TypeVar

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from remy_reliability_support import TokenHashEmbedder

from remy_retriever import RemyError

T = TypeVar("T")
CALL_BOUND_S = 60.0  # a hang detector, not a performance bound
FINDINGS = os.environ.get("REMY_FUZZ_FINDINGS")


def fuzz_settings(max_examples: int) -> settings:
    """Deterministic (derandomized, no example database) and free of time limits."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        print_blob=False,
        suppress_health_check=list(HealthCheck),
    )


# -- calling ------------------------------------------------------------------------------


class Unexpected(Exception):
    """Survey mode: stands for a recorded non-RemyError (the call "returned" it)."""


def bounded(fn: Callable[[], T], seconds: float = CALL_BOUND_S) -> T:
    """``fn()`` in a thread; an AssertionError if it has not returned in ``seconds``."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        msg = f"call did not return within {seconds:g} s (hang)"
        raise AssertionError(msg)
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def record(call: str, exc: BaseException, example: Any) -> None:
    """Survey mode: append one finding to ``REMY_FUZZ_FINDINGS``."""
    assert FINDINGS
    where = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    row = {
        "call": call,
        "type": f"{type(exc).__module__}.{type(exc).__qualname__}",
        "message": str(exc)[:300],
        "at": f"{where.filename.rsplit('/', 1)[-1]}:{where.lineno}" if where else "",
        "example": _short(example),
    }
    with open(FINDINGS, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(row) + "\n")


def expect(ok: bool, call: str, problem: str, example: Any = None) -> None:
    """Assert ``ok``; in survey mode record ``problem`` instead of failing."""
    if ok:
        return
    if FINDINGS:
        record(call, AssertionError(problem), example)
        return
    msg = f"{call}: {problem}; example: {_short(example)}"
    raise AssertionError(msg)


def _short(value: Any) -> str:
    try:
        return repr(value)[:400]
    except Exception as exc:  # a deep tree or a hostile __repr__
        return f"<unprintable {type(value).__name__}: {type(exc).__name__}>"


def outcome(
    call: str, fn: Callable[[], T], example: Any = None, seconds: float = CALL_BOUND_S
) -> T | RemyError | Unexpected:
    """What ``fn()`` returned, or the :class:`RemyError` it raised (its message must say
    something). Anything else fails the test, with ``call`` and the example in a note;
    in survey mode it is recorded and returned as :class:`Unexpected`."""
    try:
        return bounded(fn, seconds)
    except RemyError as exc:
        assert len(str(exc)) > 15, f"{call}: uninformative message {exc!r}"
        return exc
    except Exception as exc:
        if FINDINGS:
            record(call, exc, example)
            return Unexpected(f"{type(exc).__name__}: {exc}")
        exc.add_note(f"public call {call} raised {type(exc).__name__}, not a RemyError")
        exc.add_note(f"example: {_short(example)}")
        raise


# -- built-per-call values ----------------------------------------------------------------


class Make:
    """A value built fresh by :func:`real`, printed as ``label``."""

    def __init__(self, label: str, build: Callable[[], Any]) -> None:
        self.label = label
        self.build = build

    def __repr__(self) -> str:
        return self.label


def real(value: Any) -> Any:
    """``value`` with :class:`Make` placeholders built (at the top, in dicts and lists)."""
    if isinstance(value, Make):
        return value.build()
    if isinstance(value, dict):
        return {real(k): real(v) for k, v in value.items()}
    if isinstance(value, list):
        return [real(v) for v in value]
    return value


def deep_where(depth: int, op: str = "$and") -> dict[str, Any]:
    """``{"$and": [{"$and": [... {"tenant": "a"} ...]}]}`` ``depth`` levels deep, built
    without recursion."""
    where: dict[str, Any] = {"tenant": "a"}
    for _ in range(depth):
        where = {op: [where]}
    return where


def deep_list(depth: int) -> list[Any]:
    out: list[Any] = []
    for _ in range(depth):
        out = [out]
    return out


def deep_dict(depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for _ in range(depth):
        out = {"a": out}
    return out


def deep_json(depth: int) -> str:
    """``deep_where(depth)`` as JSON text (json.dumps would recurse)."""
    return '{"$and": [' * depth + '{"tenant": "a"}' + "]}" * depth


def _generator(items: Sequence[Any]) -> Iterator[Any]:
    yield from items


class _PathLike:
    """``os.PathLike`` whose ``__fspath__`` returns ``value`` (maybe not a str)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __fspath__(self) -> Any:
        return self.value

    def __repr__(self) -> str:
        return f"PathLike({self.value!r})"


def _random_object(name: str) -> Any:
    cls = type(f"Hostile{name.encode().hex()}", (), {"__repr__": lambda self: f"<Hostile{name!r}>"})
    return cls()


# -- strategies ---------------------------------------------------------------------------

EXTREME_INTS = [
    0,
    -1,
    1,
    2**31,
    2**53 + 1,
    2**63 - 1,
    2**63,
    -(2**63),
    -(2**63) - 1,
    2**64,
    10**100,
    -(10**100),
]
surrogates = st.text(
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3
)
controls = st.text(st.characters(max_codepoint=0x1F), min_size=1, max_size=5)
odd_text = st.one_of(
    st.text(max_size=12),
    surrogates,
    controls,
    st.sampled_from(
        [
            "",
            " ",
            "\x00",
            "a\x00b",
            "\x1b]0;pwned\x07",
            "\x1b[2J",
            "\u202eevil",
            "#x",
            "$and",
            "remy_doc_id",
            "memory_latest",
            "../..",
            "\ufeff",
        ]
    ),
)
numbers = st.one_of(
    st.integers(),
    st.sampled_from(EXTREME_INTS),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 1e-320, 1e308]),
)
weird_objects = st.one_of(
    st.sampled_from(
        [
            Make("object()", object),
            Make("generator(['a'])", lambda: _generator(["a"])),
            Make("generator([])", lambda: _generator([])),
            Make("lambda", lambda: lambda *a: a),
            Make("int (the type)", lambda: int),
            Make("Ellipsis", lambda: ...),
            Make("1+2j", lambda: 1 + 2j),
            Make("Decimal('NaN')", lambda: Decimal("NaN")),
            Make("Decimal('1.5')", lambda: Decimal("1.5")),
            Make("Fraction(1, 3)", lambda: fractions.Fraction(1, 3)),
            Make("np.int64(3)", lambda: np.int64(3)),
            Make("np.float32(nan)", lambda: np.float32("nan")),
            Make("np.float64(0.5)", lambda: np.float64(0.5)),
            Make("np.bool_(True)", lambda: np.bool_(True)),
            Make("np.array([1, 2])", lambda: np.array([1, 2])),
            Make("np.array([])", lambda: np.array([])),
            Make("set({'a'})", lambda: {"a"}),
            Make("frozenset()", frozenset),
            Make("bytearray(b'x')", lambda: bytearray(b"x")),
            Make("memoryview(b'x')", lambda: memoryview(b"x")),
            Make("range(3)", lambda: range(3)),
            Make("TokenHashEmbedder()", TokenHashEmbedder),
        ]
    ),
    st.text(min_size=1, max_size=6).map(
        lambda n: Make(f"<Hostile{n!r}>", lambda n=n: _random_object(n))
    ),
)
big_values = st.sampled_from(
    [
        Make("'x' * 10**7", lambda: "x" * 10**7),
        Make("'word ' * 200_000", lambda: "word " * 200_000),
        Make("list(range(100_000))", lambda: list(range(100_000))),
        Make("['a'] * 100_000", lambda: ["a"] * 100_000),
        Make("deep_list(100_000)", lambda: deep_list(100_000)),
        Make("deep_dict(100_000)", lambda: deep_dict(100_000)),
        Make("deep_where(100_000)", lambda: deep_where(100_000)),
        Make("deep_where(1_000, '$or')", lambda: deep_where(1_000, "$or")),
        Make("{f'k{i}': i for i in range(10_000)}", lambda: {f"k{i}": i for i in range(10_000)}),
    ]
)
scalars = st.one_of(st.none(), st.booleans(), numbers, odd_text, st.binary(max_size=6))
hostile = st.one_of(
    scalars,
    weird_objects,
    big_values,
    st.lists(scalars, max_size=3),
    st.tuples(scalars),
    st.dictionaries(odd_text, scalars, max_size=3),
)
"""Anything at all: the generic value for an argument of any type."""


def pick(*weighted: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """One of the strategies, chosen with these weights (``st.one_of`` flattens nested
    choices, so the many branches of ``hostile`` would crowd out a valid value)."""
    table = [strategy for weight, strategy in weighted for _ in range(weight)]
    return st.integers(0, len(table) - 1).flatmap(lambda i: table[i])


def either(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A valid value half the time, else a hostile one."""
    return pick((1, valid), (1, hostile))


def mostly(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A valid value three times in four, else a hostile one."""
    return pick((3, valid), (1, hostile))


@st.composite
def perturbed(
    draw: st.DrawFn,
    valid: dict[str, st.SearchStrategy[Any]],
    bad: dict[str, st.SearchStrategy[Any]],
    most: int = 2,
) -> dict[str, Any]:
    """Keyword arguments: some valid ones, then up to ``most`` of them (or others from
    ``bad``) replaced by hostile values. One bad value at a time reaches the code behind
    the first check; all-hostile arguments would only ever test that check."""
    out = draw(st.fixed_dictionaries({}, optional=valid))
    for name in draw(st.lists(st.sampled_from(sorted(bad)), max_size=most, unique=True)):
        out[name] = draw(bad[name], label=name)
    return out


where_keys = st.one_of(
    st.sampled_from(
        [
            "tenant",
            "year",
            "score",
            "flag",
            "missing",
            "#x",
            "#document",
            "$and",
            "$or",
            "$not",
            "$eq",
            "",
            "remy_doc_id",
            "remy_pos",
            "memory_latest",
            "a.b",
        ]
    ),
    odd_text,
)
operators = st.sampled_from(
    ["$eq", "$ne", "$in", "$nin", "$gt", "$gte", "$lt", "$lte", "$contains", "$bad", "$and", "$or"]
)
filter_values = st.one_of(
    scalars, st.lists(scalars, max_size=4), st.sampled_from([[1, 2.5], [1, "a"], [True, 1], []])
)


def _where_tree(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.dictionaries(where_keys, children, max_size=3),
        st.lists(children, max_size=3),
        st.dictionaries(operators, filter_values, max_size=2),
    )


wheres = pick(
    (
        1,
        st.sampled_from(
            [None, {"tenant": "a"}, {"$or": [{"tenant": "a"}, {"year": {"$gte": 2005}}]}]
        ),
    ),
    (3, st.recursive(filter_values, _where_tree, max_leaves=10)),
    (
        1,
        st.sampled_from(
            [
                Make("deep_where(100_000)", lambda: deep_where(100_000)),
                Make("deep_where(5_000, '$or')", lambda: deep_where(5_000, "$or")),
                Make(
                    "{'tenant': {'$in': list(range(100_000))}}",
                    lambda: {"tenant": {"$in": list(range(100_000))}},
                ),
                Make("{'year': {'$in': [1, 2.5]}}", lambda: {"year": {"$in": [1, 2.5]}}),
                Make("{'#document': 'x'}", lambda: {"#document": "x"}),
                Make("{'year': -2**63}", lambda: {"year": -(2**63)}),
                Make("{'year': 2**63}", lambda: {"year": 2**63}),
                Make("{'score': {'$gt': nan}}", lambda: {"score": {"$gt": math.nan}}),
            ]
        ),
    ),
    (1, hostile),
)


# -- broken embedders and rerankers -------------------------------------------------------


class BadEmbedder(TokenHashEmbedder):
    """A :class:`TokenHashEmbedder` broken in one way (``kind``): its embed methods
    return None, the wrong shape or type, NaN..., or an attribute is hostile."""

    KINDS = (
        "none",
        "nan",
        "inf",
        "short",
        "long",
        "scalar",
        "strings",
        "generator",
        "2d-query",
        "empty",
        "too-few",
        "ints",
        "max_tokens-str",
        "max_tokens-neg",
        "max_tokens-nan",
        "max_tokens-huge",
        "not-callable",
    )

    def __init__(self, kind: str = "nan") -> None:
        super().__init__()
        self.kind = kind
        if kind.startswith("max_tokens"):
            self.max_tokens = {
                "max_tokens-str": "x",
                "max_tokens-neg": -5,
                "max_tokens-nan": math.nan,
                "max_tokens-huge": 10**30,
            }[kind]
        if kind == "not-callable":
            self.embed_query = 5  # type: ignore[assignment,method-assign]

    def __repr__(self) -> str:
        return f"BadEmbedder({self.kind!r})"

    def _broken(self, good: np.ndarray) -> Any:
        kind, n = self.kind, good.shape[-1]
        broken: dict[str, Callable[[], Any]] = {
            "none": lambda: None,
            "nan": lambda: np.full_like(good, np.nan),
            "inf": lambda: np.full_like(good, np.inf),
            "short": lambda: good[..., : n // 2],
            "long": lambda: np.concatenate([good, good], axis=-1),
            "scalar": lambda: 0.5,
            "strings": lambda: np.full(good.shape, "x").tolist(),
            "generator": lambda: (row for row in good.tolist()),
            "2d-query": lambda: good.reshape(1, -1) if good.ndim == 1 else good[None],
            "empty": lambda: np.zeros((0,), dtype=np.float32),
            "too-few": lambda: good[:-1] if good.ndim == 2 else good,
            "ints": lambda: np.ones(good.shape, dtype=np.int64).tolist(),
        }
        return broken[kind]() if kind in broken else good

    def embed_documents(self, texts: Sequence[str]) -> Any:
        return self._broken(super().embed_documents(list(texts)))

    def embed_query(self, text: str) -> Any:
        return self._broken(super().embed_query(text))


class BadReranker:
    """A reranker whose ``score`` returns the wrong thing (``kind``)."""

    KINDS = (
        "none",
        "generator",
        "nan",
        "inf",
        "-inf",
        "one-extra",
        "one-short",
        "empty",
        "strings",
        "nones",
        "array",
        "2d",
        "huge-int",
        "complex",
        "dict",
        "scalar",
        "bools",
    )

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return f"BadReranker({self.kind!r})"

    def score(self, query: str, texts: Sequence[str]) -> Any:
        n = len(texts)
        out: dict[str, Callable[[], Any]] = {
            "none": lambda: None,
            "generator": lambda: (0.5 for _ in range(n)),
            "nan": lambda: [math.nan] * n,
            "inf": lambda: [math.inf] * n,
            "-inf": lambda: [-math.inf] * n,
            "one-extra": lambda: [0.5] * (n + 1),
            "one-short": lambda: [0.5] * (n - 1),
            "empty": lambda: [],
            "strings": lambda: ["high"] * n,
            "nones": lambda: [None] * n,
            "array": lambda: np.full(n, 0.5),
            "2d": lambda: np.full((n, 2), 0.5),
            "huge-int": lambda: [10**400] * n,
            "complex": lambda: [1j] * n,
            "dict": lambda: {i: 0.5 for i in range(n)},
            "scalar": lambda: 0.5,
            "bools": lambda: [True] * n,
        }
        return out[self.kind]()


class _NotCallableScore:
    score = 5

    def __repr__(self) -> str:
        return "<object with score=5>"


bad_embedders = pick(
    (
        3,
        st.sampled_from(BadEmbedder.KINDS).map(
            lambda k: Make(f"BadEmbedder({k!r})", lambda k=k: BadEmbedder(k))
        ),
    ),
    (1, st.sampled_from(["", "not-a-model", "/dev/null", "/nonexistent/model", "os:abort"])),
)
rerankers = pick(
    (4, st.sampled_from(BadReranker.KINDS).map(BadReranker)),
    (1, st.just(_NotCallableScore())),
    (1, st.sampled_from(["", "not-a-model", "/dev/null", "x" * 300])),
)
