"""Each layer's tests import only that layer and below.

The rule, by folder:

- ``tests/`` tests the engine and its own doors (CLI, ``remy serve``, ``remy mcp``, the
  loaders). No file there imports a framework adapter (``langchain_remy``,
  ``llama_index.retrievers.remy``, ``llama_index.vector_stores.remy``) or the framework it
  wraps (``langchain*``, ``llama_index*``), by an import statement or by
  ``importlib.import_module`` / ``pytest.importorskip`` / ``__import__`` of a literal name.
  An adapter's behaviour is tested with the adapter, in ``integrations/<adapter>/tests``.
- One exception: ``tests/doors/`` holds the cross-door contract (the same store answers a
  query alike through the Python API, the CLI, ``remy serve``, ``remy mcp`` and both
  adapters), which has to drive every door, the adapters included.
- ``integrations/<adapter>/tests`` imports its own adapter and the engine, never the other
  adapter or the other adapter's framework.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"
#: The only folder under tests/ whose files may import the adapters.
CROSS_DOOR = TESTS / "doors"
#: Every framework module an adapter package is or wraps, by its top-level name.
FRAMEWORKS = ("langchain", "llama_index")
#: Each adapter's tests folder, and the framework prefixes it may not import.
ADAPTER_TESTS = {
    ROOT / "integrations" / "langchain-remy" / "tests": ("llama_index",),
    ROOT / "integrations" / "llama-index-retrievers-remy" / "tests": ("langchain",),
}
_IMPORT_CALLS = {"import_module", "importorskip", "__import__"}


def imported_modules(source: str) -> set[str]:
    """The absolute module names a Python source imports, by statement or by a call of
    ``import_module`` / ``importorskip`` / ``__import__`` with a literal name."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0]
            if (
                called in _IMPORT_CALLS
                and isinstance(first, ast.Constant)
                and isinstance(first.value, str)
            ):
                names.add(first.value)
    return names


def _is_of(module: str, prefixes: tuple[str, ...]) -> bool:
    """``module`` is one of ``prefixes``' top-level packages (``langchain_core`` and
    ``langchain_remy`` are ``langchain``'s; ``llama_index.core`` is ``llama_index``'s)."""
    top = module.split(".", 1)[0]
    return any(top == prefix or top.startswith(prefix + "_") for prefix in prefixes)


def crossings(files: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    """``path: module`` for every import of a ``forbidden`` framework in ``files``."""
    found = []
    for path in files:
        for module in sorted(imported_modules(path.read_text(encoding="utf-8"))):
            if _is_of(module, forbidden):
                found.append(f"{path.relative_to(ROOT)}: {module}")
    return found


def test_core_tests_import_no_adapter_and_no_framework() -> None:
    files = [p for p in sorted(TESTS.rglob("*.py")) if CROSS_DOOR not in p.parents]
    assert len(files) > 100
    found = crossings(files, FRAMEWORKS)
    assert found == [], (
        "tests/ imports an adapter or its framework (test the adapter in "
        "integrations/<adapter>/tests; only tests/doors/ drives every door):\n" + "\n".join(found)
    )


def test_each_adapters_tests_import_no_other_adapter() -> None:
    for folder, forbidden in ADAPTER_TESTS.items():
        files = sorted(folder.rglob("*.py"))
        assert files, f"no tests in {folder}"
        found = crossings(files, forbidden)
        assert found == [], "an adapter's tests import the other adapter:\n" + "\n".join(found)


def test_the_cross_door_folder_drives_the_adapters() -> None:
    """tests/doors/ exists for the adapters: if it stops importing them, the exception
    in the rule above has no reason left."""
    modules = set().union(
        *(imported_modules(p.read_text(encoding="utf-8")) for p in CROSS_DOOR.rglob("*.py"))
    )
    assert any(_is_of(m, ("langchain",)) for m in modules)
    assert any(_is_of(m, ("llama_index",)) for m in modules)


def test_the_scan_sees_every_way_of_importing() -> None:
    source = (
        "import langchain_remy\n"
        "from llama_index.retrievers.remy import RemyRetriever\n"
        "def f():\n"
        "    import importlib, pytest\n"
        "    importlib.import_module('llama_index.vector_stores.remy')\n"
        "    pytest.importorskip('langchain_core.documents')\n"
        "from . import sibling\n"
        "import langchainish_thing\n"
    )
    modules = imported_modules(source)
    assert {m for m in modules if _is_of(m, FRAMEWORKS)} == {
        "langchain_remy",
        "llama_index.retrievers.remy",
        "llama_index.vector_stores.remy",
        "langchain_core.documents",
    }
