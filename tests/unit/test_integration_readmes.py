"""Each integration's README names every name its packages export
(``__all__``), so a newcomer finds the memory and conversion helpers too. General: a new
integration, package or export is checked without changing this file."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INTEGRATIONS = sorted(p.parent for p in ROOT.glob("integrations/*/pyproject.toml"))


def _exports(integration: Path) -> dict[str, list[str]]:
    """Package ``__init__.py`` -> its ``__all__``, read without importing the package
    (its framework may not be installed)."""
    out: dict[str, list[str]] = {}
    for init in sorted(integration.rglob("__init__.py")):
        if "tests" in init.relative_to(integration).parts:
            continue
        for node in ast.parse(init.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                names = ast.literal_eval(node.value)  # type: ignore[union-attr]
                out[init.relative_to(integration).parent.as_posix()] = list(names)
    return out


def test_the_integrations_are_found() -> None:
    assert len(INTEGRATIONS) >= 2
    assert all(_exports(i) for i in INTEGRATIONS)


@pytest.mark.parametrize("integration", INTEGRATIONS, ids=lambda p: p.name)
def test_the_readme_lists_every_export(integration: Path) -> None:
    readme = (integration / "README.md").read_text(encoding="utf-8")
    missing = [
        f"{package}.{name}"
        for package, names in _exports(integration).items()
        for name in names
        if f"`{name}`" not in readme
    ]
    assert missing == [], f"{integration.name}/README.md does not list {missing}"
