"""MCP client: an agent's view of ``remy mcp``, over stdio with the official MCP SDK.

This is what Claude Desktop, Cursor or an agent framework does with the server, in a
few lines of the ``mcp`` SDK (``pip install 'remy-retriever[mcp]'``):

1. index the example corpus (``examples/corpus``) into a store;
2. start ``remy mcp --db STORE`` as a subprocess and open a ``ClientSession`` on its
   stdin/stdout;
3. list the tools, call ``search`` (numbered passages with citations, and the same hits
   as JSON in ``structuredContent``), then ``add_memory`` and ``search_memories`` in
   Dana's container (``remy mcp --container-tag dana`` would pin every call to it);
4. open the cited document as a resource (``remy://documents/{id}``).

Run it with ``python examples/mcp_client.py [DATA_DIR]`` (default: a temporary
directory). It uses the bundled all-MiniLM-L6-v2 model; nothing is downloaded.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from remy_retriever import Retriever

CORPUS = Path(__file__).resolve().parent / "corpus"


async def agent(store: str) -> None:
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "remy_retriever.cli", "mcp", "--db", store],
        env=dict(os.environ),
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = (await session.list_tools()).tools
        print("tools:", ", ".join(tool.name for tool in tools))

        result = await session.call_tool("search", {"query": "install on linux", "k": 2})
        print("\nsearch('install on linux'):")
        print(result.content[0].text)
        first = result.structured_content["hits"][0]
        print(
            f"\nstructuredContent.hits[0].citation.documentId = {first['citation']['documentId']!r}"
        )

        added = await session.call_tool(
            "add_memory",
            {"content": "Dana installs everything with Homebrew.", "container_tag": "dana"},
        )
        print("\nadd_memory:", added.content[0].text)
        recalled = await session.call_tool(
            "search_memories", {"query": "how does Dana install?", "container_tag": "dana"}
        )
        print("search_memories:", recalled.content[0].text)

        link = next(c for c in result.content if c.type == "resource_link")
        document = await session.read_resource(link.uri)
        body, citation = document.contents
        print(f"\n{link.uri}: {len(body.text)} characters; citation {citation.text[:80]}...")


def main(data_dir: str) -> None:
    store = os.path.join(data_dir, "remy_data")
    with Retriever(store, collection="docs") as retriever:
        retriever.ingest(CORPUS, progress=False)
    anyio.run(agent, store)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory(prefix="remy-mcp-") as tmp:
            main(tmp)
