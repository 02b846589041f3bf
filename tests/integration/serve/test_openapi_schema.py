"""``remy serve`` against its own OpenAPI document with schemathesis (generated valid
and invalid requests, a bounded number per operation, a fixed seed): no 5xx, every
response matching its documented status code, content type and schema."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from remy_serve_support import ADMIN, RemyServer

pytestmark = pytest.mark.slow

pytest.importorskip("schemathesis", reason="schemathesis is not installed")

CHECKS = ",".join(
    [
        "not_a_server_error",
        "response_schema_conformance",
        "status_code_conformance",
        "content_type_conformance",
    ]
)


def test_the_openapi_document_lists_every_route(server: RemyServer) -> None:
    schema = httpx.get(server.url + "/openapi.json").json()
    routes = {(m.upper(), p) for p, ops in schema["paths"].items() for m in ops}
    assert routes == {
        ("POST", "/v3/documents"),
        ("POST", "/v3/documents/batch"),
        ("POST", "/v3/documents/file"),
        ("POST", "/v3/documents/list"),
        ("GET", "/v3/documents/{doc_id}"),
        ("PATCH", "/v3/documents/{doc_id}"),
        ("DELETE", "/v3/documents/{doc_id}"),
        ("DELETE", "/v3/documents/bulk"),
        ("POST", "/v3/search"),
        ("POST", "/v4/search"),
        ("POST", "/v1/search"),
        ("PATCH", "/v4/memories"),
        ("DELETE", "/v4/memories"),
        ("POST", "/ns/{namespace}/document"),
        ("POST", "/ns/{namespace}/document/batch"),
        ("POST", "/ns/{namespace}/document/file"),
        ("POST", "/ns/{namespace}/document/file/{doc_id}"),
        ("GET", "/ns/{namespace}/document/{doc_id}"),
        ("PATCH", "/ns/{namespace}/document/{doc_id}"),
        ("DELETE", "/ns/{namespace}/document"),
        ("POST", "/ns/{namespace}/search"),
        ("POST", "/ns/{namespace}/profile"),
        ("POST", "/ns/{namespace}/list/{kind}"),
        ("POST", "/ns/{namespace}/list/documents/memory-counts"),
        ("PATCH", "/ns/{namespace}/document/file/{doc_id}"),
        ("GET", "/ns/{namespace}/profile/buckets"),
        ("PUT", "/ns/{namespace}/profile/buckets"),
        ("DELETE", "/ns/{namespace}/profile/buckets"),
        ("GET", "/ns/{namespace}/memories/{memory_id}"),
        ("DELETE", "/ns/{namespace}/memories"),
        ("DELETE", "/ns/{namespace}/memories/semantic"),
        ("GET", "/ns"),
        ("GET", "/ns/{namespace}"),
        ("PATCH", "/ns/{namespace}"),
        ("DELETE", "/ns/{namespace}"),
    }
    for ops in schema["paths"].values():
        for op in ops.values():
            assert "422" not in op["responses"]  # bad requests are 400 with our error body
            assert {"400", "401"} <= set(op["responses"])


def test_schemathesis_finds_no_server_error_and_no_schema_violation(
    server: RemyServer, tmp_path: Path
) -> None:
    command = [
        str(Path(sys.executable).parent / "schemathesis"),
        "run",
        server.url + "/openapi.json",
        "--header",
        f"Authorization: Bearer {ADMIN}",
        "--checks",
        CHECKS,
        "--phases",
        "fuzzing",
        "--max-examples",
        "8",
        "--seed",
        "20261201",
        "--report-dir",
        str(tmp_path),
    ]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-6000:]
    assert "35 passed" in out and "failed" not in out.split("SUMMARY")[-1].lower(), out[-3000:]
