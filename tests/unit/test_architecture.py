"""The house rules of docs/architecture.md, checked on the source: one-way imports
(import-linter's contracts, and no module-level import cycle at all), no imports hidden in
functions except to defer heavy dependencies, small modules, a thin facade, and one home
for the stored format."""

from __future__ import annotations

import ast
import importlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "remy_retriever"
ADAPTERS = [
    ROOT / "integrations" / "langchain-remy" / "langchain_remy",
    ROOT / "integrations" / "llama-index-retrievers-remy" / "llama_index",
]
MAX_MODULE_LINES = 600
MAX_FACADE_LINES = 300


def _sources() -> list[Path]:
    files = sorted(PACKAGE.rglob("*.py"))
    for folder in ADAPTERS:
        files += sorted(folder.rglob("*.py"))
    return files


def test_import_contracts_hold() -> None:
    """The layers and forbidden contracts in pyproject.toml ([tool.importlinter])."""
    exe = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert exe is not None, "lint-imports is not installed (the dev extra has it)"
    proc = subprocess.run(
        [exe, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "BROKEN" not in proc.stdout


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.find_modules_directly_imported_by(node)):
            if not nxt.startswith("remy_retriever"):
                continue
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph.modules):
        if module.startswith("remy_retriever") and module not in index:
            visit(module)
    return found


def test_no_module_level_import_cycle() -> None:
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    graph = grimp.build_graph("remy_retriever", cache_dir=None)
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for name in ("remy_retriever.a", "remy_retriever.b", "remy_retriever.c"):
        graph.add_module(name)
    graph.add_import(importer="remy_retriever.a", imported="remy_retriever.b")
    graph.add_import(importer="remy_retriever.b", imported="remy_retriever.a")
    graph.add_import(importer="remy_retriever.b", imported="remy_retriever.c")
    assert _cycles(graph) == [["remy_retriever.a", "remy_retriever.b"]]


def _lazy_block(lines: list[str], index: int) -> bool:
    """Is line ``index`` in a run of import lines headed by a ``# lazy:`` comment?"""
    while index > 0:
        index -= 1
        above = lines[index].strip()
        if not above.startswith(("import ", "from ")):
            return above.startswith("# lazy:")
    return False


def _function_imports(path: Path) -> list[tuple[int, str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    out = []
    for node in ast.walk(ast.parse("\n".join(lines))):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for sub in ast.walk(node):
            if isinstance(sub, (ast.Import, ast.ImportFrom)):
                here = lines[sub.lineno - 1]
                if "# lazy:" not in here and not _lazy_block(lines, sub.lineno - 1):
                    out.append((sub.lineno, here.strip()))
    return out


def test_function_level_imports_only_defer_heavy_dependencies() -> None:
    """An import inside a function must say why (``# lazy: ...``): deferring torch, a
    model or a slow optional dependency. Never to dodge a cycle."""
    found = {
        f"{p.relative_to(ROOT)}:{line}": text
        for p in _sources()
        for line, text in _function_imports(p)
    }
    assert found == {}


def test_modules_stay_small() -> None:
    sizes = {
        str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines())
        for p in _sources()
    }
    assert {p: n for p, n in sizes.items() if n > MAX_MODULE_LINES} == {}


#: The only modules at the package root: the package itself, the facade and the errors.
ROOT_MODULES = {"__init__.py", "retriever.py", "errors.py", "py.typed"}


def test_only_the_facade_and_the_errors_sit_at_the_root() -> None:
    """Every other module lives in a package named after its concept."""
    loose = {p.name for p in PACKAGE.iterdir() if p.is_file() and p.name != "__pycache__"}
    assert loose == ROOT_MODULES


def test_no_module_is_called_documents() -> None:
    """Five modules named ``documents.py`` meant five things; each now says which."""
    found = [p for folder in (PACKAGE, *ADAPTERS) for p in folder.rglob("documents.py")]
    assert found == []


def test_the_facade_stays_thin() -> None:
    tree = ast.parse((PACKAGE / "retriever.py").read_text(encoding="utf-8"))
    (facade,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Retriever"]
    assert facade.end_lineno is not None
    assert facade.end_lineno - facade.lineno + 1 <= MAX_FACADE_LINES


def _reserved_keys() -> set[str]:
    """The key names records.py defines (its ``remy_...`` string constants)."""
    tree = ast.parse((PACKAGE / "schema" / "records.py").read_text(encoding="utf-8"))
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith("remy_")
    }


@pytest.mark.parametrize("path", _sources(), ids=lambda p: str(p.relative_to(ROOT)))
def test_only_records_knows_the_stored_format(path: Path) -> None:
    """No other module names a reserved key or builds/parses a chunk id by hand."""
    if path == PACKAGE / "schema" / "records.py":
        return
    tree = ast.parse(path.read_text(encoding="utf-8"))
    reserved = _reserved_keys()
    assert len(reserved) > 10
    named = {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }
    assert named & reserved == set()
    hand_made = [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("rsplit", "rpartition", "split", "partition")
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == "#"
    ]
    hand_made += [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
        and any(isinstance(v, ast.Constant) and v.value == "#" for v in node.values)
    ]
    assert hand_made == []


#: The core modules an adapter may import from, each only the names in its ``__all__``.
CORE_SURFACE = ("remy_retriever", "remy_retriever.integration", "remy_retriever.memory")


def _surface_violations(folder: Path) -> list[str]:
    """Imports of remy_retriever under ``folder`` from outside :data:`CORE_SURFACE`, or of
    names outside that module's ``__all__``."""
    public = {name: set(importlib.import_module(name).__all__) for name in CORE_SURFACE}
    bad = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            where = f"{path.name}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                module, names = node.module, [alias.name for alias in node.names]
            elif isinstance(node, ast.Import):
                module, names = node.names[0].name, []
            else:
                continue
            if module.partition(".")[0] != "remy_retriever":
                continue
            if module not in public:
                bad.append(f"{where}: {module}")
            bad += [
                f"{where}: {module}.{n} is not in its __all__"
                for n in names
                if module in public and n not in public[module]
            ]
    return bad


@pytest.mark.parametrize("folder", ADAPTERS, ids=lambda p: p.parent.name)
def test_adapters_import_only_the_public_core_surface(folder: Path) -> None:
    """Only remy_retriever, remy_retriever.integration and remy_retriever.memory, and only
    the names in their ``__all__``."""
    assert "remy_retriever" in "".join(p.read_text() for p in folder.rglob("*.py"))
    bad = _surface_violations(folder)
    assert not bad, "imports outside the public core surface:\n" + "\n".join(bad)


def test_the_surface_check_catches_private_imports(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text(
        "import remy_retriever.stores.dense\n"
        "from remy_retriever.schema.records import chunk_id\n"
        "from remy_retriever import Retriever, _private\n"
    )
    assert _surface_violations(tmp_path) == [
        "bad.py:1: remy_retriever.stores.dense",
        "bad.py:2: remy_retriever.schema.records",
        "bad.py:3: remy_retriever._private is not in its __all__",
    ]


#: Modules and builtins that turn stored bytes or text into code.
_CODE_FROM_DATA_MODULES = {
    "pickle",
    "cPickle",
    "dill",
    "cloudpickle",
    "marshal",
    "shelve",
    "joblib",
}
_CODE_FROM_DATA_CALLS = {"eval", "exec", "compile", "__import__"}


def _code_from_data(tree: ast.AST) -> list[str]:
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in _CODE_FROM_DATA_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.split(".")[0] in _CODE_FROM_DATA_MODULES:
                found.append(node.module)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in _CODE_FROM_DATA_CALLS:
                found.append(f"{node.func.id}()")
        elif isinstance(node, ast.Attribute) and node.attr == "import_module":
            found.append("importlib.import_module")
    return found


def test_no_stored_data_becomes_code() -> None:
    """SECURITY.md: remy never unpickles, evaluates or imports anything a store names."""
    offenders = {
        str(p.relative_to(ROOT)): hits
        for p in sorted(PACKAGE.rglob("*.py"))
        if (hits := _code_from_data(ast.parse(p.read_text(encoding="utf-8"))))
    }
    assert offenders == {}


def test_the_code_from_data_check_finds_each_kind() -> None:
    source = "import pickle\nfrom marshal import loads\neval('1')\nimportlib.import_module(x)\n"
    assert _code_from_data(ast.parse(source)) == [
        "pickle",
        "marshal",
        "eval()",
        "importlib.import_module",
    ]


def test_every_module_is_named_in_the_architecture_doc() -> None:
    """Each module of the package appears in docs/architecture.md: by its path
    (``stores/exact``), or by its name on a line that names its folder."""
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    lines = doc.splitlines()
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name in {"__init__.py", "__main__.py"}:
            continue
        rel = path.relative_to(PACKAGE)
        if rel.parent == Path("."):
            if path.name not in doc:
                missing.append(str(rel))
            continue
        if rel.with_suffix("").as_posix() in doc:
            continue
        folder = f"{rel.parent.as_posix()}/"
        name = re.compile(rf"\b{re.escape(path.stem)}\b")
        if not any(folder in line and name.search(line) for line in lines):
            missing.append(str(rel))
    assert not missing, f"add these modules to docs/architecture.md: {missing}"
