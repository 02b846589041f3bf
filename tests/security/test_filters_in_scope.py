"""A filter is evaluated inside the caller's scope. With a key bound
to ``alice`` (a real ``remy serve``) and through a ``remy mcp`` pinned to ``alice``, a
``string_contains`` (or ``ignoreCase``) probe for a value only Bob holds gets exactly the
answer a probe for a value nobody holds gets; and the value scan's work limits count what
is inside the scope only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from remy_serve_support import ALICE, RemyServer
from security_support import ALICE_VALUES, BOB_VALUES, McpClient

from remy_retriever import Document, InvalidFilterError, Retriever
from remy_retriever.schema.document import CONTAINER_TAG_KEY
from remy_retriever.schema.filters import scope_where

pytestmark = pytest.mark.slow

HELD = (*BOB_VALUES, *ALICE_VALUES)
_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789"


@st.composite
def foreign_probes(draw: st.DrawFn) -> str:
    """A piece (3+ characters) of one of Bob's values that no value of Alice's holds."""
    value = draw(st.sampled_from(BOB_VALUES))
    start = draw(st.integers(0, len(value) - 3))
    end = draw(st.integers(start + 3, len(value)))
    probe = value[start:end]
    if draw(st.booleans()):
        probe = probe.upper()  # with ignoreCase, the same probe
    return probe


ABSENT = st.text(_CHARS, min_size=3, max_size=12).filter(
    lambda s: not any(s in v or s.casefold() in v.casefold() for v in HELD)
)


def tree(probe: str, kind: str, negate: bool) -> dict[str, Any]:
    condition: dict[str, Any] = {"key": "codename", "value": probe, "negate": negate}
    if kind == "string_contains":
        condition.update(filterType="string_contains", ignoreCase=True)
    else:
        condition.update(ignoreCase=True)
    return {"AND": [condition]}


def http_answers(server: RemyServer, filters: dict[str, Any]) -> list[Any]:
    """Alice's view of every endpoint that takes ``filters`` (timing left out)."""
    headers = {"Authorization": f"Bearer {ALICE}"}
    out: list[Any] = []
    for path, body in (
        ("/v3/search", {"q": "project note launch plan", "filters": filters}),
        ("/v4/search", {"q": "launch", "filters": filters, "searchMode": "hybrid"}),
        ("/v3/documents/list", {"filters": filters}),
    ):
        reply = httpx.post(server.url + path, json=body, headers=headers, timeout=120)
        data = reply.json()
        data.pop("timing", None)
        out.append((reply.status_code, data))
    return out


def mcp_answer(client: McpClient, filters: dict[str, Any]) -> Any:
    result = client.call(
        "search_documents", {"query": "project note launch plan", "filters": filters}
    )
    structured = dict(result.structured_content or {})
    structured.pop("timing", None)
    return result.is_error, [c.model_dump() for c in result.content], structured


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    foreign=foreign_probes(),
    absent=ABSENT,
    kind=st.sampled_from(["string_contains", "ignoreCase"]),
    negate=st.booleans(),
)
def test_a_probe_for_bobs_value_answers_as_one_for_a_value_nobody_holds(
    server: RemyServer,
    mcp_alice: McpClient,
    foreign: str,
    absent: str,
    kind: str,
    negate: bool,
) -> None:
    if kind == "ignoreCase":
        foreign = next(v for v in BOB_VALUES if foreign.casefold() in v)  # a whole value
    assert http_answers(server, tree(foreign, kind, negate)) == http_answers(
        server, tree(absent, kind, negate)
    )
    assert mcp_answer(mcp_alice, tree(foreign, kind, negate)) == mcp_answer(
        mcp_alice, tree(absent, kind, negate)
    )


def test_alices_own_values_still_match(server: RemyServer, mcp_alice: McpClient) -> None:
    """The scope keeps the filter working for what the caller holds."""
    filters = tree("HERON", "string_contains", negate=False)
    status, body = http_answers(server, filters)[0]
    assert status == 200
    assert {r["documentId"] for r in body["results"]} == {"alice-1"}
    is_error, _, structured = mcp_answer(mcp_alice, filters)
    assert not is_error
    assert {r["documentId"] for r in structured["results"]} == {"alice-1"}
    assert not json.dumps(body).count("bob-")


def test_the_scans_work_limits_count_only_what_is_in_scope(tmp_path: Path) -> None:
    """Many chunks and values outside the scope do not bring a scan over its limits;
    inside the scope they do, with the limit named."""
    with Retriever(str(tmp_path / "db")) as docs:
        docs.add(
            [
                Document(
                    id=f"b{i}",
                    text=f"Bob note {i}.",
                    metadata={CONTAINER_TAG_KEY: "bob", "k": f"v{i}", "j": i},
                )
                for i in range(30)
            ]
            + [
                Document(
                    id="a", text="Alice note.", metadata={CONTAINER_TAG_KEY: "alice", "k": "x"}
                )
            ]
        )
        alice = scope_where(["alice"], key=CONTAINER_TAG_KEY)
        bob = scope_where(["bob"], key=CONTAINER_TAG_KEY)
        assert docs.scan_metadata_values(["k", "j"], where=alice, limit=5) == {"k": ["x"], "j": []}
        with pytest.raises(InvalidFilterError, match="more than 5 distinct"):
            docs.scan_metadata_values(["k", "j"], where=bob, limit=5)
        assert docs.scan_metadata_values(["k"], where=alice, max_chunks=2) == {"k": ["x"]}
        with pytest.raises(InvalidFilterError, match="more than 2 chunks"):
            docs.scan_metadata_values(["k"], where=bob, max_chunks=2)
        with pytest.raises(InvalidFilterError, match="over the limit of 16 keys"):
            docs.scan_metadata_values([f"k{i}" for i in range(17)], where=alice)
