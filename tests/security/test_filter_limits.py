"""A filter's shape is checked before any stored value is
read. A search with 500 ``string_contains`` keys is refused with 400 naming the limit
(at most 16 scanned keys), and while many such requests arrive, plain searches keep
being answered."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from remy_serve_support import ALICE, RemyServer

from remy_retriever import InvalidFilterError
from remy_retriever.schema.filters import MAX_CONDITIONS, MAX_SCANNED_KEYS
from remy_retriever.supermemory.filters import where_from_filters

HEADERS = {"Authorization": f"Bearer {ALICE}"}


def wide_filter(keys: int) -> dict[str, Any]:
    """``keys`` substring conditions, each on its own metadata key."""
    return {
        "OR": [
            {"key": f"field_{i}", "value": "secret", "filterType": "string_contains"}
            for i in range(keys)
        ]
    }


def test_too_many_scanned_keys_are_refused_before_any_value_is_read() -> None:
    asked: list[list[str]] = []

    def values(keys: list[str]) -> dict[str, list[object]]:
        asked.append(list(keys))
        return {k: [] for k in keys}

    with pytest.raises(InvalidFilterError, match=f"over the limit of {MAX_SCANNED_KEYS} keys"):
        where_from_filters(wide_filter(500), values=values)
    with pytest.raises(InvalidFilterError, match=f"more than {MAX_CONDITIONS} conditions"):
        where_from_filters(wide_filter(MAX_CONDITIONS + 1), values=values)
    assert asked == []  # refused on the filter alone
    where_from_filters(wide_filter(MAX_SCANNED_KEYS), values=values)
    assert len(asked) == 1 and len(asked[0]) == MAX_SCANNED_KEYS  # one scan, every key


@pytest.mark.slow
def test_a_500_key_filter_gets_400_while_plain_searches_are_served(server: RemyServer) -> None:
    heavy = {"q": "launch plan", "filters": wide_filter(500)}
    plain = {"q": "project note launch plan"}

    def send(body: dict[str, Any]) -> httpx.Response:
        return httpx.post(server.url + "/v3/search", json=body, headers=HEADERS, timeout=120)

    with ThreadPoolExecutor(max_workers=16) as pool:
        heavies = [pool.submit(send, heavy) for _ in range(40)]
        plains = [pool.submit(send, plain) for _ in range(8)]
        heavy_replies = [f.result() for f in heavies]
        plain_replies = [f.result() for f in plains]
    for reply in heavy_replies:
        assert reply.status_code == 400, reply.text
        assert f"over the limit of {MAX_SCANNED_KEYS} keys" in reply.json()["error"]
    for reply in plain_replies:
        assert reply.status_code == 200, reply.text
        assert reply.json()["results"], reply.text
