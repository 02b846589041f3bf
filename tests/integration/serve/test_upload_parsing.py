"""Uploads to a real ``remy serve`` are parsed in worker processes outside the request
threads (issue 26 item 5, issue 27 "Bounded parsing"): slow and hostile uploads never
stall searches, a file over the budget is a 400 naming it, and an upload when every
parser is busy and the queue is full is a 503 with ``Retry-After``."""

from __future__ import annotations

import threading
import zlib
from collections.abc import Iterator

import httpx
import pytest
from remy_serve_support import ADMIN, RemyServer

pytestmark = pytest.mark.slow

AUTH = {"Authorization": f"Bearer {ADMIN}"}
#: The server's budget per upload, and its pool: one worker, two uploads waiting.
PARSE_SECONDS = 1.0
EXTRA = ["--parse-workers", "1", "--parse-queue", "2", "--max-parse-seconds", str(PARSE_SECONDS)]


def slow_html() -> bytes:
    """Menus nested 80,000 deep: more than the budget to read."""
    depth = 80_000
    menus = b'<div class="menu"><a>m</a>' * depth + b"x" + b"</div>" * depth
    return b"<html><body>" + menus + b"</body></html>"


def space_run_pdf() -> bytes:
    """The 922-byte PDF of the issue: one text run of 300,000 spaces."""
    content = zlib.compress(b"BT /F1 12 Tf 72 700 Td (a" + b" " * 300_000 + b"b) Tj ET", 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(content)
        + content
        + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return out


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RemyServer]:
    running = RemyServer(tmp_path_factory.mktemp("serve") / "db", EXTRA).start()
    try:
        add = {"content": "Remy installs on Linux with pip.", "containerTag": "alice"}
        assert httpx.post(running.url + "/v3/documents", json=add, headers=AUTH, timeout=120)
        assert search(running).status_code == 200  # loads the model before the tests
        yield running
    finally:
        running.stop()
    assert not running.tracebacks(), running.log()


def search(server: RemyServer) -> httpx.Response:
    body = {"q": "install on linux", "containerTags": ["alice"]}
    return httpx.post(server.url + "/v3/search", json=body, headers=AUTH, timeout=120)


def upload(server: RemyServer, name: str, data: bytes) -> httpx.Response:
    return httpx.post(
        server.url + "/v3/documents/file",
        files={"file": (name, data, "application/octet-stream")},
        data={"containerTag": "alice"},
        headers=AUTH,
        timeout=120,
    )


def _uploads(server: RemyServer, count: int, data: bytes) -> tuple[list[threading.Thread], list]:
    answers: list[httpx.Response] = []
    threads = [
        threading.Thread(target=lambda i=i: answers.append(upload(server, f"slow{i}.html", data)))
        for i in range(count)
    ]
    for t in threads:
        t.start()
    return threads, answers


def test_slow_uploads_never_stall_searches(server: RemyServer) -> None:
    threads, answers = _uploads(server, 12, slow_html())
    searched = []
    while any(t.is_alive() for t in threads) or not searched:
        reply = search(server)
        searched.append((reply.status_code, any(t.is_alive() for t in threads)))
        if len(searched) >= 20:
            break
    for t in threads:
        t.join(120)
    assert all(code == 200 for code, _ in searched), searched
    assert any(during for _, during in searched)  # answered while uploads were parsing
    codes = sorted(reply.status_code for reply in answers)
    assert set(codes) <= {200, 400, 503} and len(codes) == 12, codes
    for reply in answers:
        if reply.status_code == 400:
            assert "too large or too slow to parse" in reply.json()["error"]


def test_a_full_parse_queue_is_a_503_with_retry_after(server: RemyServer) -> None:
    threads, answers = _uploads(server, 8, slow_html())
    for t in threads:
        t.join(120)
    busy = [reply for reply in answers if reply.status_code == 503]
    assert busy, [reply.status_code for reply in answers]
    for reply in busy:
        assert reply.headers["Retry-After"].isdigit()
        assert "busy parsing uploads" in reply.json()["error"]
    assert all(reply.status_code in (400, 503) for reply in answers)


def test_the_922_byte_space_run_pdf_is_read_and_stored(server: RemyServer) -> None:
    data = space_run_pdf()
    assert len(data) < 1024
    reply = upload(server, "spaces.pdf", data)
    assert reply.status_code == 200, reply.text
    assert search(server).status_code == 200
