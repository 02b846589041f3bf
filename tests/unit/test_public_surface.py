"""The public surface, the httpx way: every public module's ``__all__`` is exactly what it
exposes, every type in a public signature is exported, and every public exception lives
in ``remy_retriever.errors`` under ``RemyError``.

The public import paths are those README.md names ("Public import paths"); every other
module is internal and may change without notice.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
import types
from pathlib import Path
from typing import Any

import pytest

import remy_retriever
from remy_retriever import errors

PUBLIC_MODULES = (
    "remy_retriever",
    "remy_retriever.errors",
    "remy_retriever.memory",
    "remy_retriever.loaders",
    "remy_retriever.integration",
)
PACKAGE = Path(remy_retriever.__file__).resolve().parent
README = PACKAGE.parent / "README.md"
#: Module attributes that are not part of a surface: the package's version string.
NOT_EXPORTS = {"__version__"}


def exposed(module: types.ModuleType) -> set[str]:
    """The names a module offers: its attributes without a leading underscore, leaving
    out submodules and the ``from __future__`` feature objects."""
    names = set()
    for name, value in vars(module).items():
        if name.startswith("_") or isinstance(value, types.ModuleType):
            continue
        if type(value).__name__ == "_Feature":  # from __future__ import annotations
            continue
        names.add(name)
    return names


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_every_public_module_exposes_exactly_its_all(name: str) -> None:
    module = importlib.import_module(name)
    assert sorted(module.__all__) == sorted(exposed(module) - NOT_EXPORTS)


def test_the_readme_names_the_public_import_paths() -> None:
    text = README.read_text(encoding="utf-8")
    section = text.split("## Public import paths", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"^- `(remy_retriever(?:\.\w+)*)`", section, re.M))
    assert named == set(PUBLIC_MODULES)


def _exported() -> dict[int, str]:
    out: dict[int, str] = {}
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        for attr in module.__all__:
            out[id(getattr(module, attr))] = f"{name}.{attr}"
    return out


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _annotation_types(owner: Any, annotation: object) -> list[type]:
    """The classes of remy_retriever an annotation names (string annotations are read
    in the defining module's namespace)."""
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    module = importlib.import_module(owner.__module__)
    found = []
    for ident in _IDENT.findall(str(text)):
        value = getattr(module, ident, None)
        if (
            isinstance(value, type)
            and value.__module__.startswith("remy_retriever")
            and not value.__name__.startswith("_")
        ):
            found.append(value)
    return found


def _signature_types(obj: Any) -> list[tuple[str, type]]:
    """(where, class) for each remy class in the public signatures of ``obj``."""
    out: list[tuple[str, type]] = []

    def add(where: str, func: Any) -> None:
        try:
            sig = inspect.signature(func)
        except (TypeError, ValueError):
            return
        for param in sig.parameters.values():
            for cls in _annotation_types(func, param.annotation):
                out.append((f"{where}({param.name})", cls))
        for cls in _annotation_types(func, sig.return_annotation):
            out.append((f"{where} ->", cls))

    if inspect.isclass(obj):
        add(obj.__name__, obj)
        for name, member in inspect.getmembers(obj):
            if name.startswith("_") and name != "__init__":
                continue
            if isinstance(member, property) and member.fget is not None:
                add(f"{obj.__name__}.{name}", member.fget)
            elif inspect.isfunction(member) or inspect.ismethod(member):
                add(f"{obj.__name__}.{name}", member)
        if dataclasses.is_dataclass(obj):
            for field in dataclasses.fields(obj):
                for cls in _annotation_types(obj, field.type):
                    out.append((f"{obj.__name__}.{field.name}", cls))
    elif inspect.isfunction(obj):
        add(obj.__name__, obj)
    return out


def test_every_type_in_a_public_signature_is_exported() -> None:
    exported = _exported()
    missing = set()
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        for attr in module.__all__:
            for where, cls in _signature_types(getattr(module, attr)):
                if id(cls) not in exported:
                    missing.add(f"{name}.{where}: {cls.__module__}.{cls.__qualname__}")
    assert sorted(missing) == []


def test_the_signature_check_finds_an_unexported_type() -> None:
    class Hidden:
        pass

    def uses(value: Hidden) -> None: ...

    uses.__module__ = __name__
    globals()["Hidden"] = Hidden
    Hidden.__module__ = "remy_retriever.somewhere"
    try:
        assert [c for _, c in _signature_types(uses)] == [Hidden]
    finally:
        del globals()["Hidden"]


def test_every_public_exception_lives_in_errors_under_remy_error() -> None:
    defined_elsewhere = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "errors.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef) or node.name.startswith("_"):
                continue
            bases = {ast.unparse(b) for b in node.bases}
            if any(b.endswith(("Error", "Exception")) for b in bases) or node.name.endswith(
                "Error"
            ):
                defined_elsewhere.append(f"{path.relative_to(PACKAGE)}:{node.name}")
    # Pydantic wire models named ...Error describe an error in a response body.
    assert [d for d in defined_elsewhere if not _is_wire_model(d)] == []
    for name in errors.__all__:
        cls = getattr(errors, name)
        assert issubclass(cls, errors.RemyError), name
        assert getattr(remy_retriever, name) is cls, f"{name} is not exported by the package"


def _is_wire_model(entry: str) -> bool:
    path, name = entry.split(":")
    module = "remy_retriever." + path.removesuffix(".py").replace("/", ".")
    module = module.removesuffix(".__init__")
    try:
        cls = getattr(importlib.import_module(module), name)
    except ImportError:  # an optional extra (FastAPI) is missing
        return False
    return not issubclass(cls, BaseException)
