"""No 5xx at the edge: a generated corpus of malformed requests (deep JSON, huge
integers, wrong types, bad content types, truncated bodies and multipart, bad Unicode)
against a real ``remy serve`` and a real ``remy mcp`` over HTTP gets 0 answers with a
5xx, and no MCP tool answer calls itself a bug."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from remy_listeners import KEY, running

pytest.importorskip("fastapi", reason="the server extra is not installed")
pytest.importorskip("mcp", reason="the mcp extra is not installed")

AUTH = {"Authorization": f"Bearer {KEY}"}
DEEP = "[" * 50_000 + "]" * 50_000
HUGE = "9" * 5_000


def _bodies() -> list[tuple[str, bytes]]:
    """(content type, body) pairs: the malformed JSON corpus."""
    texts = [
        DEEP,
        '{"q": "x", "filters": ' + '{"AND": [' * 2_000 + "]}" * 2_000 + "}",
        json.dumps({"q": "x", "filters": DEEP}),  # a deep JSON *string* in filters
        json.dumps({"q": "x", "filters": '{"AND": ' + DEEP + "}"}),
        '{"q": "x", "limit": ' + HUGE + "}",
        '{"q": "x", "chunkThreshold": 1e999}',
        '{"q": "x", "limit": NaN}',
        '{"q": "x", "filters": {"AND": [{"key": "n", "value": ' + HUGE + "}]}}",
        '{"content": "x", "metadata": {"n": ' + HUGE + "}}",
        '{"q": "\\ud800"}',
        '{"content": "\\udfff text"}',
        '{"\\ud800": 1}',
        '{"q": 5}',
        '{"q": ["x"], "limit": "many"}',
        '{"q": "x", "containerTags": 7, "filters": []}',
        '{"q": "x", "filters": "not json"}',
        '{"documents": [' + ",".join(['{"content": 5}'] * 3) + "]}",
        '{"documents": "x"}',
        '{"id": 5, "newContent": ["x"]}',
        '{"ids": [' + HUGE + "]}",
        '{"q": "x"',  # truncated
        "",
        "null",
        "[]",
        '"just a string"',
    ]
    bodies = [("application/json", t.encode("utf-8", "surrogatepass")) for t in texts]
    bodies += [
        ("application/json", b'{"q": "\xff\xfe bad utf-8"}'),
        ("application/json; charset=latin-1", b'{"q": "caf\xe9"}'),
        ("text/plain", b'{"q": "x"}'),
        ("application/x-www-form-urlencoded", b"q=x&limit=3"),
        ("multipart/form-data", b"no boundary"),
        ("application/vnd.api+json", DEEP.encode()),
    ]
    return bodies


ROUTES = [
    ("POST", "/v3/search"),
    ("POST", "/v4/search"),
    ("POST", "/v1/search"),
    ("POST", "/v3/documents"),
    ("POST", "/v3/documents/batch"),
    ("POST", "/v3/documents/list"),
    ("PATCH", "/v3/documents/doc_x"),
    ("DELETE", "/v3/documents/bulk"),
    ("PATCH", "/v4/memories"),
    ("DELETE", "/v4/memories"),
]

BOUNDARY = "remyboundary"


def _uploads() -> list[tuple[str, bytes]]:
    """(content type, body) pairs: malformed multipart uploads."""
    head = f"--{BOUNDARY}\r\nContent-Disposition: form-data; name="
    ok_file = f'{head}"file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhello\r\n'
    end = f"--{BOUNDARY}--\r\n"
    kind = f"multipart/form-data; boundary={BOUNDARY}"
    forms = [
        ok_file[: len(ok_file) // 2],  # truncated in the middle of a part
        f'{head}"file"; filename="a.txt"\r\n\r\nno end boundary',
        ok_file + f'{head}"metadata"\r\n\r\n{DEEP}\r\n' + end,
        ok_file + f'{head}"metadata"\r\n\r\n{{"n": {HUGE}}}\r\n' + end,
        ok_file + f'{head}"containerTags"\r\n\r\n[{DEEP}]\r\n' + end,
        ok_file + f'{head}"metadata"\r\n\r\n{{"a": "\\ud800"}}\r\n' + end,
        f'{head}"file"; filename="a.pdf"\r\n\r\n%PDF-1.4 garbage\r\n' + end,
        f'{head}"file"; filename="a.docx"\r\n\r\nPK\x03\x04 not a zip\r\n' + end,
        f'{head}"file"; filename="\udcff.txt"\r\n\r\nx\r\n' + end,
        end,
    ]
    return [(kind, f.encode("utf-8", "surrogateescape")) for f in forms]


@pytest.fixture(scope="module")
def serve_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    where = tmp_path_factory.mktemp("serve")
    args = ["--db", str(where / "db"), "--api-key", KEY, "--log-level", "warning"]
    with running("serve", args, where / "serve.log") as url:
        yield url


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_no_malformed_request_gets_a_5xx_from_remy_serve(serve_url: str) -> None:
    failures = []
    sent = 0
    with httpx.Client(base_url=serve_url, headers=AUTH, timeout=120) as client:
        client.post("/v3/documents", json={"content": "Tea grows in Darjeeling"})
        for method, path in ROUTES:
            for kind, body in _bodies():
                reply = client.request(method, path, content=body, headers={"Content-Type": kind})
                sent += 1
                if reply.status_code >= 500:
                    failures.append((method, path, body[:80], reply.status_code, reply.text[:200]))
        for kind, body in _uploads():
            reply = client.post("/v3/documents/file", content=body, headers={"Content-Type": kind})
            sent += 1
            if reply.status_code >= 500:
                failures.append(("POST", "file", body[:80], reply.status_code, reply.text[:200]))
    assert sent > 300
    assert not failures, failures


def _rpc(method: str, params: object, id_: int = 1) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params}).encode()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_no_malformed_request_gets_a_5xx_or_a_bug_from_remy_mcp(tmp_path: Path) -> None:
    args = ["--db", str(tmp_path / "db"), "--transport", "streamable-http", "--api-key", KEY]
    with running("mcp", args, tmp_path / "mcp.log") as url:
        headers = {**AUTH, "Accept": "application/json, text/event-stream"}
        json_headers = {**headers, "Content-Type": "application/json"}
        with httpx.Client(base_url=url, headers=headers, timeout=120) as client:
            init = {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "corpus", "version": "1"},
            }
            opened = client.post("/mcp", content=_rpc("initialize", init), headers=json_headers)
            assert opened.status_code == 200, opened.text
            session = {**json_headers, "mcp-session-id": opened.headers["mcp-session-id"]}
            note = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
            client.post("/mcp", content=note.encode(), headers=session)
            raw_calls = [
                '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": '
                '"search", "arguments": {"query": "x", "k": ' + HUGE + "}}}",
                '{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": '
                '"search", "arguments": {"query": "x", "where": ' + "[" * 300 + "]" * 300 + "}}}",
                '{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": '
                '"add_memory", "arguments": {"content": "\\ud800"}}}',
                '{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": '
                '"search_documents", "arguments": {"query": "x", "filters": '
                + json.dumps(DEEP)
                + "}}}",
                '{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": '
                '"search", "arguments": {"query": "x", "k": 1e999}}}',
                DEEP,
                '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": ',
                "",
                '{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": 5}}',
            ]
            failures = []
            for text in raw_calls:
                for kind in ("application/json", "text/plain"):
                    reply = client.post(
                        "/mcp",
                        content=text.encode("utf-8", "surrogatepass"),
                        headers={**session, "Content-Type": kind},
                    )
                    if reply.status_code >= 500 or "a bug in remy-retriever" in reply.text:
                        failures.append((text[:80], kind, reply.status_code, reply.text[:300]))
            bad_utf8 = client.post(
                "/mcp", content=b'{"jsonrpc": "2.0", "\xff": 1}', headers=session
            )
            if bad_utf8.status_code >= 500:
                failures.append(("bad utf-8", bad_utf8.status_code, bad_utf8.text[:200]))
        assert not failures, failures
