"""``remy serve``'s API keys and container-tag bindings, and its refusal to serve an
unauthenticated store beyond loopback (no I/O, no model)."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi", reason="the server extra is not installed")

from remy_retriever.cli import main
from remy_retriever.cli.serve import check_host
from remy_retriever.errors import InvalidInputError
from remy_retriever.http_api.auth import (
    AccessDeniedError,
    KeyRing,
    Principal,
    UnauthorizedError,
    parse_api_key,
)

SECRET = "k" * 20


def test_keys_parse_with_and_without_tags() -> None:
    assert parse_api_key(SECRET).tags is None
    assert parse_api_key(f"{SECRET}:alice, bob").tags == frozenset({"alice", "bob"})
    for bad, match in [
        ("short", "16-256 printable"),
        (f"{SECRET}:", "comma-separated list"),
        (f"{SECRET}:alice,,bob", "comma-separated list"),
        (f"{SECRET}:bad tag!", "not a valid container tag"),
    ]:
        with pytest.raises(InvalidInputError, match=match):
            parse_api_key(bad)


def test_a_bound_key_is_narrowed_to_its_tags() -> None:
    alice = Principal(frozenset({"alice"}))
    assert alice.scope(None) == ["alice"] and alice.scope(["alice"]) == ["alice"]
    with pytest.raises(AccessDeniedError, match="'bob'"):
        alice.scope(["alice", "bob"])
    assert alice.write_tag(None) == "alice"
    with pytest.raises(AccessDeniedError):
        alice.write_tag("bob")
    assert alice.can_see("alice") and not alice.can_see("bob") and not alice.can_see(None)
    two = Principal(frozenset({"a", "b"}))
    with pytest.raises(InvalidInputError, match="name one with containerTag"):
        two.write_tag(None)
    anyone = Principal(None)
    assert anyone.scope(None) is None and anyone.write_tag(None) is None and anyone.can_see(None)


def test_the_key_ring_wants_a_known_bearer_key() -> None:
    ring = KeyRing([parse_api_key(f"{SECRET}:alice"), parse_api_key("z" * 20)])
    assert ring.principal(f"Bearer {SECRET}").tags == frozenset({"alice"})
    assert ring.principal("bearer " + "z" * 20).tags is None
    for header in (None, "", "Bearer", f"Basic {SECRET}", "Bearer wrong-key-000000000", "Bearer é"):
        with pytest.raises(UnauthorizedError):
            ring.principal(header)
    assert KeyRing([]).principal(None).tags is None  # no keys: open (loopback only)


def test_no_key_means_loopback_only(capsys: pytest.CaptureFixture[str]) -> None:
    for host in ("127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"):
        assert check_host(host, keys=False) == host
    for host in ("0.0.0.0", "192.168.1.10", "example.com", "::"):
        with pytest.raises(InvalidInputError, match="no API key is set"):
            check_host(host, keys=False)
        assert check_host(host, keys=True) == host
    assert main(["serve", "--db", "/nonexistent/never-created", "--host", "0.0.0.0"]) == 2
    assert "--host 0.0.0.0 is reachable from other machines" in capsys.readouterr().err
