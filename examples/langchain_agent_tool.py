"""LangChain agent tool: a tool-calling chat model searches with ``remy_search_tool``.

Run it with ``python examples/langchain_agent_tool.py [DATA_DIR]`` (needs the
``langchain-remy`` package, which ``make venv`` installs). It ingests the bundled corpus in
``examples/corpus/`` into an embedded Chroma store in ``DATA_DIR`` (default: a fresh
temporary directory; an existing store is reused), wraps a ``RemyRetriever`` in
``remy_search_tool`` and runs the usual tool-calling loop: the model asks for a search,
the tool answers with a ``ToolMessage`` whose content lists numbered, cited passages
(``[1] title > section (source)``) and whose artifact holds the hits as JSON-ready dicts,
then the model answers citing the passage numbers. The script prints the tool call, the
ToolMessage content, the artifact's size and the final answer.

Offline, the chat model is LangChain's deterministic ``GenericFakeChatModel`` replaying
two scripted messages (a tool call, then an answer). To use a real model, change the one
line in :func:`chat_model`, e.g. ``return ChatOpenAI(model="gpt-4o-mini")`` (after
``pip install langchain-openai``); the loop is the same.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

from langchain_core.language_models import (
    BaseChatModel,
    GenericFakeChatModel,
    LanguageModelInput,
)
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_remy import RemyRetriever, remy_search_tool

from remy_retriever import Retriever

CORPUS = Path(__file__).resolve().parent / "corpus"
QUESTION = "How do I install remy on Linux?"
MAX_TURNS = 4


class ScriptedToolModel(GenericFakeChatModel):
    """``GenericFakeChatModel`` with ``bind_tools``: it replays its messages whatever tools
    it is given, so the tool-calling loop below runs unchanged with a real model."""

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        return self


def chat_model() -> BaseChatModel:
    """The chat model. Offline: a fake that first calls remy_search, then answers."""
    return ScriptedToolModel(
        messages=iter(
            [
                AIMessage(
                    content="",
                    tool_calls=[
                        {
                            "name": "remy_search",
                            "args": {"query": "how do I install remy on linux"},
                            "id": "call_1",
                        }
                    ],
                ),
                AIMessage(
                    content="Install the packaged CLI with `sudo apt install remy-cli` on "
                    "Debian or Ubuntu [1]; elsewhere use pip in a virtual environment [1]."
                ),
            ]
        )
    )


def run_agent(model: BaseChatModel, tools: list[BaseTool], question: str) -> list[BaseMessage]:
    """The classic loop: call the model, run the tools it asks for, repeat until it answers."""
    by_name = {tool.name: tool for tool in tools}
    llm = model.bind_tools(tools)
    messages: list[BaseMessage] = [
        SystemMessage("Use remy_search to find passages; cite them by number, like [1]."),
        HumanMessage(question),
    ]
    for _ in range(MAX_TURNS):
        reply = llm.invoke(messages)
        messages.append(reply)
        if not isinstance(reply, AIMessage) or not reply.tool_calls:
            break
        for call in reply.tool_calls:
            print(f"tool call: {call['name']}({call['args']})")
            tool_message = by_name[call["name"]].invoke(call)  # a ToolMessage with artifact
            messages.append(tool_message)
            print(f"\ntool message content:\n{tool_message.content}\n")
            print(f"tool message artifact: {len(tool_message.artifact)} hits")
            top = tool_message.artifact[0]
            print(f"  top hit: {top['id']} (score {top['score']:.4f})\n")
    return messages


def main(data_dir: str) -> None:
    with Retriever(data_dir, collection="examples") as engine:
        engine.ingest(CORPUS)
        search = remy_search_tool(RemyRetriever(engine, k=3))
        messages = run_agent(chat_model(), [search], QUESTION)
        print(f"answer: {messages[-1].content}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    else:
        with tempfile.TemporaryDirectory(prefix="remy-agent-") as tmp:
            main(tmp)
