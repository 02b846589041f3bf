"""``remy mcp`` driven as a real subprocess by the official ``mcp`` SDK's own client
(``ClientSession`` over ``stdio_client``, and over ``streamable_http_client``).

Four servers per module, started in parallel and shared by the tests: the full server
over stdio and over streamable HTTP (every tool, schemas, citations, resources, bad
arguments, ``--allow-path``), a server pinned to one container tag over streamable HTTP,
each on its own copy of one small embedded store, and a read-only server over stdio
reading the same data from a Chroma server (``--server``; the chroma_server fixture).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from jsonschema.validators import validator_for
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from remy_processes import offline_env

from remy_retriever import Document, Retriever, SearchHit
from remy_retriever.mcp_server.formatting import format_hits
from remy_retriever.memory import MemoryStore

pytestmark = [pytest.mark.slow, pytest.mark.server, pytest.mark.timeout(600)]

ALL_TOOLS = {
    "search",
    "search_documents",
    "search_memories",
    "add_memory",
    "update_memory",
    "forget_memory",
    "add_documents",
}
SEARCH_TOOLS = {"search", "search_documents", "search_memories"}
ENV = offline_env()
DOCS = [
    Document(
        id="tea.md",
        title="Tea guide",
        path="guides/tea.md",
        text="# Tea guide\n\n## Brewing green tea\n\nBrew green tea at 80 degrees for two "
        "minutes; boiling water makes it bitter.\n\n## Storing tea\n\nKeep tea leaves in "
        "an airtight tin away from light.",
        metadata={"container_tag": "team-a", "topic": "tea"},
    ),
    Document(
        id="coffee.md",
        title="Coffee guide",
        url="https://example.org/coffee",
        text="# Coffee guide\n\n## Espresso\n\nAn espresso shot takes 25 seconds at nine "
        "bars of pressure.",
        metadata={"container_tag": "team-b", "topic": "coffee"},
    ),
    Document(
        id="manual.pdf",
        title="Kettle manual",
        text="Fill the kettle to the marked line.\n\nDescale the kettle every month with "
        "citric acid to keep the heating plate clean.",
        pages=(0, 37),
        metadata={"container_tag": "team-a", "topic": "kettle"},
    ),
]


# -- servers and clients ---------------------------------------------------------------------


class Client:
    """A connected MCP ``ClientSession`` used from synchronous tests: the session lives
    in one task of a portal's event loop, which the calls are sent to."""

    def __init__(self, portal: BlockingPortal, session: ClientSession, url: str = "") -> None:
        self.portal = portal
        self.session = session
        self.url = url  # streamable HTTP only

    def tools(self) -> dict[str, Any]:
        return {t.name: t for t in self.portal.call(self.session.list_tools).tools}

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        async def call() -> Any:
            return await self.session.call_tool(name, arguments)

        return self.portal.call(call)

    def read(self, uri: str) -> Any:
        async def read() -> Any:
            return await self.session.read_resource(uri)

        return self.portal.call(read)

    def ok(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call ``name``; the result must not be an error and must match its output schema."""
        result = self.call(name, arguments)
        assert not result.is_error, result.content[0].text
        check_schema(self.tools()[name].output_schema, result.structured_content)
        return result

    def error(self, name: str, arguments: dict[str, Any]) -> str:
        """Call ``name``; the result must be an error result; returns its message."""
        result = self.call(name, arguments)
        assert result.is_error, f"{name}({arguments}) did not fail: {result.content}"
        (content,) = result.content
        return str(content.text)


def check_schema(schema: dict[str, Any] | None, value: Any) -> None:
    assert schema is not None
    cls = validator_for(schema)
    cls.check_schema(schema)
    errors = sorted(cls(schema).iter_errors(value), key=str)
    assert errors == [], [e.message for e in errors[:3]]


@contextlib.asynccontextmanager
async def _stdio(
    runs: dict[str, tuple[list[str], dict[str, str]]],
) -> AsyncIterator[dict[str, ClientSession]]:
    """One stdio session per ``remy mcp`` (arguments, environment), starting together."""
    async with contextlib.AsyncExitStack() as stack:
        sessions = {}
        for name, (args, env) in runs.items():
            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "remy_retriever.cli", "mcp", *args],
                env={**ENV, **env},
            )
            read, write = await stack.enter_async_context(stdio_client(params))
            sessions[name] = await stack.enter_async_context(ClientSession(read, write))
        with anyio.fail_after(300):  # each server loads the model before it answers
            async with anyio.create_task_group() as group:
                for session in sessions.values():
                    group.start_soon(session.initialize)
        yield sessions


@contextlib.asynccontextmanager
async def _http(url: str) -> AsyncIterator[ClientSession]:
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_http(args: list[str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    http = ["--transport", "streamable-http", "--host", "127.0.0.1", "--port", str(port)]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "remy_retriever.cli", "mcp", *args, *http],
            env=ENV,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return proc, f"http://127.0.0.1:{port}/mcp"
        time.sleep(0.3)
    proc.kill()
    pytest.fail(f"remy mcp over HTTP did not start: {log.read_text()[-2000:]}")


#: The id of the team-b memory in the base store.
TEAM_B: dict[str, str] = {}


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def base_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with three documents (two containers) and a memory in each container."""
    db = tmp_path_factory.mktemp("mcp-base") / "db"
    with Retriever(str(db)) as docs:
        docs.add(DOCS)
        with MemoryStore(retriever=docs) as memories:
            memories.add("The team-a office kettle is on the third floor", container_tag="team-a")
            other = memories.add(
                "The team-b espresso machine needs descaling", container_tag="team-b"
            )
            TEAM_B["id"] = other.id
    return db


def _fill_server(client: Any, lexical: Path) -> None:
    """The base store's documents and memories, in collections of a Chroma server."""
    with Retriever(client=client, collection="mcp-docs", lexical_path=lexical / "d") as docs:
        docs.add(DOCS)
        with MemoryStore(
            client, collection="mcp-memories", retriever=docs, lexical_path=lexical / "m"
        ) as memories:
            memories.add("The team-a office kettle is on the third floor", container_tag="team-a")


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """An allowed folder (with a file, and links leading out of it) and a secret outside."""
    root = tmp_path_factory.mktemp("mcp-files")
    allowed, outside = root / "allowed", root / "outside"
    (allowed / "notes").mkdir(parents=True)
    outside.mkdir()
    (allowed / "notes" / "herbal.md").write_text(
        "# Herbal infusions\n\nRooibos and chamomile contain no caffeine at all.\n"
    )
    (outside / "secret.md").write_text("# Secret\n\nThe vault password is zanzibar-quokka.\n")
    os.symlink(outside / "secret.md", allowed / "link-to-secret.md")
    os.symlink(outside, allowed / "link-to-outside")
    return {"allowed": allowed, "outside": outside}


@pytest.fixture(scope="module")
def servers(
    base_store: Path,
    chroma_server: Any,
    files: dict[str, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, Client]]:
    """``full-stdio``, ``full-http`` and ``pinned-http``, each on its own copy of the
    store, and ``read-only-stdio`` on the same data in a Chroma server (``--server``),
    started in parallel."""
    _fill_server(chroma_server.client(), tmp_path_factory.mktemp("mcp-server-lex"))
    base = tmp_path_factory.mktemp("mcp-servers")
    allow = ["--allow-path", str(files["allowed"])]
    dbs = {}
    for name in ("full-stdio", "full-http", "pinned-http"):
        dbs[name] = base / name
        shutil.copytree(base_store, dbs[name])
    http_args = {
        "full-http": ["--db", str(dbs["full-http"]), *allow],
        "pinned-http": ["--db", str(dbs["pinned-http"]), *allow, "--container-tag", "team-a"],
    }
    on_server = [
        *("--server", f"{chroma_server.host}:{chroma_server.port}"),
        *("--collection", "mcp-docs", "--memory-collection", "mcp-memories"),
    ]
    stdio_args = {
        "full-stdio": (["--db", str(dbs["full-stdio"]), *allow], {}),
        # through a Chroma server; the BM25 indexes in a cache of the test's own
        "read-only-stdio": (
            [*on_server, "--read-only", *allow],
            {"XDG_CACHE_HOME": str(base / "cache")},
        ),
    }
    procs: list[subprocess.Popen[bytes]] = []
    with contextlib.ExitStack() as stack:
        stack.callback(_stop, procs)  # last: after the sessions are closed
        pool = stack.enter_context(ThreadPoolExecutor(2))
        started = {
            name: pool.submit(_start_http, args, base / f"{name}.log")
            for name, args in http_args.items()
        }
        portal = stack.enter_context(start_blocking_portal())
        stdio = stack.enter_context(portal.wrap_async_context_manager(_stdio(stdio_args)))
        clients = {name: Client(portal, session) for name, session in stdio.items()}
        urls = {}
        for name, future in started.items():
            proc, urls[name] = future.result()
            procs.append(proc)
        for name, url in urls.items():
            session = stack.enter_context(portal.wrap_async_context_manager(_http(url)))
            clients[name] = Client(portal, session, url)
        yield clients


@pytest.fixture(params=["full-stdio", "full-http"])
def client(request: pytest.FixtureRequest, servers: dict[str, Client]) -> Client:
    return servers[request.param]


# -- listing ---------------------------------------------------------------------------------


def test_tools_are_listed_with_schemas_and_annotations(client: Client) -> None:
    tools = client.tools()
    assert set(tools) == ALL_TOOLS
    for name, tool in tools.items():
        assert tool.description and len(tool.description) > 60, name
        assert tool.input_schema["type"] == "object" and tool.input_schema["properties"]
        assert tool.input_schema.get("additionalProperties") is False, name
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"
        validator_for(tool.input_schema).check_schema(tool.input_schema)
        assert tool.annotations.read_only_hint is (name in SEARCH_TOOLS), name
        assert tool.annotations.destructive_hint is (name == "forget_memory"), name
    search = tools["search"]
    assert search.input_schema["required"] == ["query"]
    assert search.input_schema["properties"]["k"]["maximum"] == 50
    assert "1-50" in search.description and "citation" in search.description


# -- the tools -------------------------------------------------------------------------------


def test_search_numbers_cited_passages_and_matches_its_schema(client: Client) -> None:
    result = client.ok("search", {"query": "how hot should the water be for green tea", "k": 3})
    hits = [SearchHit.from_dict(h) for h in result.structured_content["hits"]]
    assert len(hits) == 3 and hits[0].citation.document_id == "tea.md"
    text = result.content[0].text
    assert text == format_hits(hits)
    for number, hit in enumerate(hits, start=1):
        assert hit.citation.document_id and hit.citation.source
        assert f"[{number}] " in text
    assert text.startswith("[1] Tea guide > Brewing green tea (guides/tea.md)\nBrew green tea")
    pdf = client.ok("search", {"query": "descale the kettle with citric acid", "k": 1})
    assert "(manual.pdf, pp. 1-2)" in pdf.content[0].text
    # the cited documents are offered as resources, and read back whole with their citation
    links = [c for c in result.content[1:] if c.type == "resource_link"]
    assert links[0].uri == "remy://documents/tea.md"
    read = client.read("remy://documents/tea.md")
    body, citation = read.contents
    assert body.text == DOCS[0].text
    assert json.loads(citation.text)["source"] == "guides/tea.md"
    listed = {r.name: r for r in client.portal.call(client.session.list_resources).resources}
    assert {"tea.md", "coffee.md", "manual.pdf"} <= set(listed)
    assert (
        listed["tea.md"].uri == "remy://documents/tea.md" and listed["tea.md"].title == "Tea guide"
    )


def test_every_tool_works_and_matches_its_output_schema(
    client: Client, files: dict[str, Path]
) -> None:
    docs = client.ok(
        "search_documents",
        {
            "query": "espresso pressure",
            "limit": 2,
            "filters": {"AND": [{"key": "topic", "value": "coffee"}]},
        },
    )
    results = docs.structured_content["results"]
    assert [r["documentId"] for r in results] == ["coffee.md"]
    assert 0 < results[0]["score"] <= 1 and results[0]["chunks"]
    contains = {"key": "topic", "value": "COF", "filterType": "string_contains", "ignoreCase": True}
    docs = client.ok("search_documents", {"query": "guide", "filters": {"OR": [contains]}})
    assert [r["documentId"] for r in docs.structured_content["results"]] == ["coffee.md"]

    tag = "ana"
    added = client.ok("add_memory", {"content": "Ana drinks oolong tea", "container_tag": tag})
    memory_id = added.structured_content["id"]
    assert added.structured_content["containerTag"] == tag
    found = client.ok("search_memories", {"query": "what tea does Ana drink", "container_tag": tag})
    assert [r["id"] for r in found.structured_content["results"]] == [memory_id]

    updated = client.ok("update_memory", {"id": memory_id, "new_content": "Ana drinks jasmine tea"})
    assert updated.structured_content["version"] == 2
    new_id = updated.structured_content["id"]
    forgot = client.ok(
        "forget_memory", {"content": "Ana drinks jasmine tea", "reason": "Ana asked us to"}
    )
    assert forgot.structured_content["memory"]["id"] == new_id
    assert forgot.structured_content["memory"]["forgotten"] is True
    assert forgot.structured_content["reason"] == "Ana asked us to"
    after = client.ok("search_memories", {"query": "Ana tea", "container_tag": tag})
    assert after.structured_content["results"] == []

    ingest = client.ok("add_documents", {"path": "notes"})  # relative: from the allowed folder
    assert ingest.structured_content["added"] == ["herbal.md"]
    hits = client.ok("search", {"query": "which infusions have no caffeine", "k": 1})
    assert hits.structured_content["hits"][0]["citation"]["documentId"] == "herbal.md"


def test_add_documents_reads_nothing_outside_the_allowed_folders(
    client: Client, files: dict[str, Path]
) -> None:
    allowed, outside = files["allowed"], files["outside"]
    for path in (
        str(outside / "secret.md"),  # outside
        "../outside/secret.md",  # up and out
        str(allowed / "notes" / ".." / ".." / "outside"),
        "link-to-secret.md",  # a link inside pointing out
        str(allowed / "link-to-outside"),  # a linked folder pointing out
        "link-to-outside/secret.md",
    ):
        message = client.error("add_documents", {"path": path})
        assert "outside the folders this server may read" in message, message
        assert str(allowed) in message
    # the allowed folder itself: its links out are skipped, never followed
    report = client.ok("add_documents", {"path": str(allowed)})
    skipped = {Path(s["path"]).name for s in report.structured_content["skipped"]}
    assert {"link-to-secret.md", "link-to-outside"} <= skipped
    hits = client.ok("search", {"query": "vault password zanzibar quokka", "k": 10})
    assert all("zanzibar" not in h["text"] for h in hits.structured_content["hits"])


@pytest.mark.parametrize(
    ("tool", "arguments", "named"),
    [
        ("search", {"query": "tea", "k": 0}, "k"),
        ("search", {"query": "tea", "k": "five"}, "k"),
        ("search", {"query": "tea", "mode": "fuzzy"}, "mode"),
        ("search", {"k": 3}, "query"),
        ("search", {"query": "tea", "top": 3}, "top: no such argument (search takes query, k,"),
        ("search", {"query": "tea", "where": {"topic": {"$regex": "t.*"}}}, "$regex"),
        ("search_documents", {"query": "tea", "filters": {"XOR": []}}, "AND"),
        ("search_memories", {"query": "tea", "search_mode": "everything"}, "search_mode"),
        ("add_memory", {"content": ""}, "content"),
        ("update_memory", {"id": "42", "new_content": "x"}, "id"),
        ("update_memory", {"id": "mem_" + "0" * 32, "new_content": "x"}, "mem_000"),
        ("forget_memory", {"id": "mem_" + "0" * 32, "content": "x"}, "exactly one"),
        ("add_documents", {"path": "does-not-exist.md"}, "no such file"),
        ("no_such_tool", {}, "no_such_tool"),
    ],
)
def test_a_bad_argument_is_an_error_result_and_the_server_keeps_serving(
    client: Client, tool: str, arguments: dict[str, Any], named: str
) -> None:
    message = client.error(tool, arguments)
    assert named in message, message
    assert "Traceback" not in message and len(message) < 2000
    assert not client.call("search", {"query": "tea", "k": 1}).is_error


# -- guards ----------------------------------------------------------------------------------


def test_read_only_offers_only_the_search_tools(servers: dict[str, Client]) -> None:
    """(This server reads a Chroma server: ``--server``.)"""
    client = servers["read-only-stdio"]
    assert set(client.tools()) == SEARCH_TOOLS
    hits = client.ok("search", {"query": "green tea water temperature", "k": 1})
    assert hits.content[0].text.startswith("[1] Tea guide > Brewing green tea (guides/tea.md)")
    for tool, arguments in (
        ("add_memory", {"content": "x"}),
        ("forget_memory", {"content": "The team-a office kettle is on the third floor"}),
        ("add_documents", {"path": "notes"}),
    ):
        assert "read-only" in client.error(tool, arguments)
    found = client.ok("search_memories", {"query": "office kettle", "container_tag": "team-a"})
    assert len(found.structured_content["results"]) == 1  # not forgotten


def test_a_pinned_container_tag_cannot_be_escaped(servers: dict[str, Client]) -> None:
    client = servers["pinned-http"]
    tools = client.tools()
    for tool in tools.values():
        assert not {"container_tag", "container_tags"} & set(tool.input_schema["properties"])
    # searches see the pinned container only, whatever the filter says
    for where in (
        None,
        {"container_tag": "team-b"},
        {"$or": [{"topic": "coffee"}, {"topic": "tea"}]},
    ):
        hits = client.ok("search", {"query": "espresso coffee tea kettle", "k": 10, "where": where})
        ids = {h["citation"]["documentId"] for h in hits.structured_content["hits"]}
        assert ids <= {"tea.md", "manual.pdf"}, (where, ids)
        assert bool(ids) is (where != {"container_tag": "team-b"})
    docs = client.ok("search_documents", {"query": "espresso", "limit": 10})
    assert {r["documentId"] for r in docs.structured_content["results"]} <= {"tea.md", "manual.pdf"}
    for tool, arguments in (
        ("search_documents", {"query": "espresso", "container_tags": ["team-b"]}),
        ("search_memories", {"query": "espresso", "container_tag": "team-b"}),
        ("add_memory", {"content": "x", "container_tag": "team-b"}),
    ):
        assert "pinned to container tag 'team-a'" in client.error(tool, arguments)
    mine = client.ok("search_memories", {"query": "kettle espresso descaling", "limit": 10})
    memories = mine.structured_content["results"]
    assert [m["memory"] for m in memories] == ["The team-a office kettle is on the third floor"]
    # passing the pinned tag itself is fine; what is added lands in the pinned container
    added = client.ok("add_memory", {"content": "Team A likes rooibos", "container_tag": "team-a"})
    assert added.structured_content["containerTag"] == "team-a"
    ingest = client.ok("add_documents", {"path": "notes/herbal.md"})
    assert ingest.structured_content["added"] == ["herbal.md"]
    citation = json.loads(client.read("remy://documents/herbal.md").contents[1].text)
    assert citation["metadata"]["container_tag"] == "team-a"
    # the other container's memories and documents are out of reach
    other = "The team-b espresso machine needs descaling"
    assert "no memory" in client.error("forget_memory", {"content": other})
    assert "no memory" in client.error("forget_memory", {"id": TEAM_B["id"]})
    assert "no memory" in client.error("update_memory", {"id": TEAM_B["id"], "new_content": "x"})
    with pytest.raises(MCPError, match="no document 'coffee.md'"):
        client.read("remy://documents/coffee.md")
    listed = client.portal.call(client.session.list_resources).resources
    assert {r.name for r in listed} == {"tea.md", "manual.pdf", "herbal.md"}


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Host": "evil.example"}, 421),  # DNS rebinding: another name for 127.0.0.1
        ({"Origin": "http://evil.example"}, 403),  # a web page's script
        ({}, 200),
    ],
)
def test_http_refuses_other_hosts_and_web_origins(
    servers: dict[str, Client], headers: dict[str, str], status: int
) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "0"},
        },
    }
    request = urllib.request.Request(
        servers["full-http"].url,
        data=json.dumps(initialize).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            got = response.status
    except urllib.error.HTTPError as exc:
        got = exc.code
    assert got == status
