"""Agent tools over RemyRetriever: LangChain's create_retriever_tool and remy_search_tool."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import ToolMessage
from langchain_core.tools import create_retriever_tool
from langchain_remy import RemyRetriever, remy_search_tool
from langchain_remy.convert import hit_to_document, hits_to_documents
from langchain_remy.tools import citation_label, format_documents

from remy_retriever import Citation, Retriever, SearchHit
from remy_retriever.mcp_server.formatting import citation_label as mcp_citation_label
from remy_retriever.mcp_server.formatting import format_hits


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


def _cited_hits() -> list[SearchHit]:
    """Hits with a heading path and a path, with a page range, with a URL and a page, and
    with nothing but an id; texts start with their heading path, as the engine's do."""
    cited = [
        (
            Citation("guide.md", 2, 10, 40, ("Guide", "Install"), "Guide", path="docs/guide.md"),
            "Guide > Install\n\nRun apt install remy.",
        ),
        (Citation("manual.pdf", 0, 0, 16, page=3, page_end=4), "Fill the kettle."),
        (
            Citation(
                "web", 1, 0, 30, ("Notes", "Tea"), "Tea notes", "https://example.org/t", page=7
            ),
            "Notes > Tea\n\nGreen tea at 80 degrees.",
        ),
        (Citation("notes", 0, 0, 5), "A note."),
    ]
    return [
        SearchHit(id=f"{c.document_id}#{c.chunk_index}", score=0.5, text=text, citation=c)
        for c, text in cited
    ]


def test_the_tools_passages_are_the_mcp_search_tools_exactly() -> None:
    hits = _cited_hits()
    assert format_documents(hits_to_documents(hits)) == format_hits(hits)


def test_a_documents_citation_label_is_the_engines() -> None:
    """The label the tool prints is ``Citation.label()``, as the CLI and ``remy mcp`` print."""
    for hit in _cited_hits():
        assert citation_label(hit_to_document(hit)) == hit.citation.label()
        assert mcp_citation_label(hit) == hit.citation.label()
