"""``remy mcp``: remy's search and memories as Model Context Protocol tools.

A door on top of the engine, like the CLI (which starts it: ``remy mcp``). Modules:
:mod:`.formatting` (hits as numbered, cited passages, the LangChain tool's format),
:mod:`.schemas` (each tool's arguments and output as pydantic models, whose JSON Schemas
are the tools' ``inputSchema`` and ``outputSchema``), :mod:`.tools` (what each tool does,
with the guards: read-only, a pinned container tag, the folders ``add_documents`` may
read) and :mod:`.server` (the official ``mcp`` SDK's low-level ``Server`` over stdio or
streamable HTTP).

Only :mod:`.server` imports ``mcp`` (the ``remy-retriever[mcp]`` extra), and nothing
imports :mod:`.server` but ``remy mcp`` at run time, so ``import remy_retriever`` never
imports the SDK.
"""
