"""The layering the project promises: engine/ and sandbox/ never import server/ (or a client),
no module imports itself back through others, and the terminal client speaks only the wire."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("server", "engine", "sandbox", "harness")


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            found: set[str] = set()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = []
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    # `from pkg import module` imports that module, not the package's names
                    folder = ROOT.joinpath(*node.module.split("."))
                    names = [
                        f"{node.module}.{alias.name}"
                        if (folder / f"{alias.name}.py").exists() or (folder / alias.name).is_dir()
                        else node.module
                        for alias in node.names
                    ]
                elif isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                found |= {n for n in names if n.split(".")[0] in PACKAGES}
            graph[_module(path)] = found
    return graph


def test_engine_and_sandbox_never_import_the_server_or_a_client() -> None:
    for module, imported in _imports().items():
        if module.split(".")[0] in ("engine", "sandbox"):
            bad = {m for m in imported if m.split(".")[0] in ("server", "harness")}
            assert not bad, f"{module} imports {bad}"


def test_sandbox_imports_nothing_above_it() -> None:
    for module, imported in _imports().items():
        if module.startswith("sandbox"):
            assert all(m.startswith("sandbox") for m in imported), (module, imported)


def test_no_module_imports_itself_back_through_others() -> None:
    graph = _imports()

    def reaches(start: str) -> bool:
        stack, seen = list(graph.get(start, ())), set()
        while stack:
            node = stack.pop()
            if node == start:
                return True
            if node not in seen:
                seen.add(node)
                stack.extend(graph.get(node, ()))
        return False

    assert [module for module in sorted(graph) if reaches(module)] == []
