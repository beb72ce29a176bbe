"""The packages form one-way layers: docindex < deployments < serve_app < evals, benchmarks.

Every module is parsed (not imported), and every import counts, including
those deferred into functions or under TYPE_CHECKING: a deferred import is
still a dependency, it only hides a cycle until the function runs.
"""
from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Lower rank may not import higher rank. Equal ranks may import each other (no cycle).
RANK = {"docindex": 0, "deployments": 1, "serve_app": 2, "evals": 3, "benchmarks": 3}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in RANK:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = list(path.relative_to(REPO).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _resolve(name: str) -> str | None:
    """The project module `name` refers to: itself, else its closest package."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def _imports(module: str, path: Path) -> set[str]:
    """Project modules that `module` imports, anywhere in its source."""
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    # benchmarks/ are scripts that put their own folder on sys.path.
    siblings = {m.rpartition(".")[2]: m for m in MODULES if m.rpartition(".")[0] == package}
    targets: set[str] = set()

    def add(name: str) -> None:
        top = name.partition(".")[0]
        if module.startswith("benchmarks.") and top in siblings:
            name = f"{package}.{name}"
        resolved = _resolve(name)
        if resolved is not None and resolved != module:
            targets.add(resolved)

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            for alias in node.names:
                # `from pkg import mod` imports pkg.mod; `from mod import name` imports mod.
                full = f"{origin}.{alias.name}"
                add(full if full in MODULES else origin)
    return targets


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in sorted(graph.get(node, ())):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_walk_sees_every_package_and_deferred_imports():
    assert {m.partition(".")[0] for m in MODULES} == set(RANK)
    # deferred (in-function) imports are edges too
    assert "docindex.quantize" in GRAPH["docindex.minilm"]
    assert "deployments.tracing" in GRAPH["deployments.retriever"]


def test_the_cycle_finder_finds_a_planted_cycle():
    graph = {**GRAPH, "docindex.embedder": GRAPH["docindex.embedder"] | {"docindex.minilm"}}
    assert ["docindex.embedder", "docindex.minilm", "docindex.quantize"] in _cycles(graph)


def test_no_import_cycle_between_modules():
    assert _cycles(GRAPH) == []


def test_no_lower_package_imports_a_higher_one():
    upward = sorted(
        f"{module} imports {target}"
        for module, targets in GRAPH.items()
        for target in targets
        if RANK[target.partition(".")[0]] > RANK[module.partition(".")[0]]
    )
    assert upward == []


def test_deployments_never_names_serve_app():
    mentions = [
        f"{path.relative_to(REPO)}:{lineno}"
        for path in sorted((REPO / "deployments").rglob("*.py"))
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "serve_app" in line
    ]
    assert mentions == []


# A module over this many lines has outgrown its one job: split it along a seam
# (a module whose name says what it holds), as docindex/browse.py and deployments/mcp_pool.py were.
MAX_MODULE_LINES = 400
SIZE_CHECKED = ("serve_app", "deployments", "docindex")


def _oversized(limit: int) -> list[str]:
    return sorted(
        f"{path.relative_to(REPO)}: {lines} lines"
        for module, path in MODULES.items()
        if module.partition(".")[0] in SIZE_CHECKED
        and (lines := len(path.read_text(encoding="utf-8").splitlines())) > limit
    )


def test_no_module_in_the_served_packages_is_over_400_lines():
    assert _oversized(MAX_MODULE_LINES) == []


def test_the_size_check_sees_every_served_package():
    # It reads every module of the three packages (a limit of 0 flags each one, subpackages included).
    flagged = {line.split("/")[0] for line in _oversized(0)}
    assert flagged == set(SIZE_CHECKED)
    assert any(line.startswith("docindex/mcp/") for line in _oversized(0))
