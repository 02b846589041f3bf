"""Agent tools over RemyRetriever: LangChain's create_retriever_tool and remy_search_tool."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import create_retriever_tool
from langchain_remy import RemyRetriever, remy_search_tool

from remy_retriever import Retriever, SearchHit


def _call(query: str, call_id: str = "call-1") -> dict[str, Any]:
    return {"name": "remy_search", "args": {"query": query}, "id": call_id, "type": "tool_call"}


def test_create_retriever_tool(corpus_retriever: Retriever, install_query: str) -> None:
    tool = create_retriever_tool(
        RemyRetriever(corpus_retriever, k=2),
        "search_docs",
        "Search the Remy documentation.",
        response_format="content_and_artifact",
    )

    message = tool.invoke({**_call(install_query), "name": "search_docs"})

    assert isinstance(message, ToolMessage)
    assert "sudo apt install remy-cli" in message.content
    assert [d.metadata["document_id"] for d in message.artifact] == ["install.md"] * 2
    assert message.artifact[0].metadata["citation"]["chunkIndex"] == 2


def test_remy_search_tool_cites_and_returns_hits(
    corpus_retriever: Retriever, install_query: str
) -> None:
    tool = remy_search_tool(RemyRetriever(corpus_retriever, k=3))

    message = tool.invoke(_call(install_query))

    assert isinstance(message, ToolMessage)
    assert message.tool_call_id == "call-1"
    content = str(message.content)
    first, _, rest = content.partition("\n")
    assert first.startswith("[1] Installing Remy > Install on Linux (")
    assert first.endswith("install.md)")
    assert rest.startswith("On Debian and Ubuntu")  # heading line not repeated
    assert "\n\n[2] " in content and "\n\n[3] " in content
    hits = [SearchHit.from_dict(item) for item in message.artifact]
    assert hits == corpus_retriever.search(install_query, k=3)
    assert tool.name == "remy_search"
    assert set(tool.args) == {"query"}
    assert tool.response_format == "content_and_artifact"


async def test_remy_search_tool_async_and_plain_engine(
    corpus_retriever: Retriever, install_query: str
) -> None:
    tool = remy_search_tool(corpus_retriever, name="docs", description="Search the docs.")

    message = await tool.ainvoke({**_call(install_query), "name": "docs"})

    assert isinstance(message, ToolMessage)
    assert len(message.artifact) == 4  # RemyRetriever's default k
    assert message.artifact[0]["id"] == "install.md#2"
    assert tool.description == "Search the docs."
    # Invoked with plain args (not a tool call), a content_and_artifact tool returns the text.
    assert str(tool.invoke({"query": install_query})).startswith("[1] Installing Remy")


def test_tool_keeps_the_tenant_filter(tenant_retriever: Retriever) -> None:
    tool = remy_search_tool(RemyRetriever(tenant_retriever, k=6, where={"tenant": "b"}))

    message = tool.invoke(_call("install the agent on linux"))

    assert {item["metadata"]["tenant"] for item in message.artifact} == {"b"}
    assert "https://b.example.com/install" in str(message.content)
    assert "a.example.com" not in str(message.content)


def test_no_results_message(tenant_retriever: Retriever) -> None:
    tool = remy_search_tool(RemyRetriever(tenant_retriever, where={"tenant": "nobody"}))

    message = tool.invoke(_call("install"))

    assert message.content == "No passages found for this query."
    assert message.artifact == []
