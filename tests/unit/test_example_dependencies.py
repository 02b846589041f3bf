"""An example (or README code) may import only what a user's install
brings: a package's dependencies or one of its extras, never a distribution that only a
``test`` or ``dev`` extra declares (``examples/langchain_vectorstore.py`` imported
``langchain_community`` and ``langchain_text_splitters``, which only the adapter's test
extra brought). General: a new example, README or extra is checked without changing this."""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: the same parser, as a package
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[2]
PYPROJECTS = [ROOT / "pyproject.toml", *sorted(ROOT.glob("integrations/*/pyproject.toml"))]
TEST_EXTRAS = {"test", "dev"}
#: Distributions an example uses as the user's own program, not as a part of remy.
USERS_OWN = {"supermemory"}  # the SDK whose client `remy serve` answers
SOURCES = [
    *sorted((ROOT / "examples").glob("*.py")),
    ROOT / "README.md",
    *sorted(ROOT.glob("integrations/*/README.md")),
]


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~\[;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _declared() -> tuple[set[str], set[str]]:
    """(distributions a user install can bring, those only test/dev extras declare)."""
    runtime: set[str] = set()
    testing: set[str] = set()
    for path in PYPROJECTS:
        project = tomllib.loads(path.read_text(encoding="utf-8"))["project"]
        runtime.add(project["name"].lower())
        runtime |= {_name(r) for r in project.get("dependencies", [])}
        for extra, reqs in project.get("optional-dependencies", {}).items():
            (testing if extra in TEST_EXTRAS else runtime).update(_name(r) for r in reqs)
    return runtime, testing - runtime


def _imports(source: Path) -> set[str]:
    text = source.read_text(encoding="utf-8")
    blocks = [text] if source.suffix == ".py" else re.findall(r"```python\n(.*?)```", text, re.S)
    found: set[str] = set()
    for block in blocks:
        for node in ast.walk(ast.parse(block)):
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names)


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_import_only_what_an_install_declares(source: Path) -> None:
    _, test_only = _declared()
    owners = packages_distributions()
    undeclared = sorted(
        f"{module} ({dist})"
        for module in _imports(source)
        for dist in (d.lower().replace("_", "-") for d in owners.get(module, []))
        if dist in test_only and dist not in USERS_OWN
    )
    assert undeclared == [], (
        f"{source.name} imports what only a test extra declares: {undeclared}; declare "
        "it in a user-facing extra and say which"
    )


def test_the_check_sees_a_test_only_distribution() -> None:
    _, test_only = _declared()
    assert "langchain-tests" in test_only
