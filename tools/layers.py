"""The layers as the code draws them: which part of trainfit imports which, read from the source's import statements.

    python tools/layers.py            print the table (markdown)
    python tools/layers.py --write    replace the table between the markers in docs/architecture.md
    python tools/layers.py --check    exit 1 when docs/architecture.md's table differs from the code

A *part* is a package under ``src/trainfit`` (``estimate``, ``plan``...) or a top-level module (``service``,
``options``...). Its *level* is 0 when it imports no other part, else one more than the highest level it imports
(parts that import each other share a level and are listed together). ``tests/test_layers.py`` runs
``--check`` so the drawing in the docs cannot drift from the code.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from functools import lru_cache
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "trainfit"
DOC = ROOT / "docs" / "architecture.md"
BEGIN = "<!-- layers:begin (python tools/layers.py --write) -->"
END = "<!-- layers:end -->"


#: module name -> (parsed file, is a package ``__init__``)
Source = dict[str, tuple[ast.Module, bool]]
Graph = dict[str, set[str]]


def module_name(path: Path, src: Path = SRC) -> str:
    parts = list(path.relative_to(src.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@lru_cache(maxsize=4)
def source_tree(src: Path = SRC) -> Source:
    """Every module under ``src``, parsed (once per process: the layer test and the doc table read the same tree)."""
    return {module_name(p, src): (ast.parse(p.read_text(encoding="utf-8")), p.name == "__init__.py")
            for p in sorted(src.rglob("*.py"))}


def import_target(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The module a ``from ... import`` names, relative imports resolved."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
    """Every import statement with (is function-local, is under ``if TYPE_CHECKING:``)."""
    def walk(node: ast.AST, local: bool, typing_only: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, local, typing_only
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                yield from walk(child, True, typing_only)
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                yield from walk(child, local, True)
            else:
                yield from walk(child, local, typing_only)
    yield from walk(tree, False, False)


def targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, source: Source) -> list[str]:
    """The project's modules an import statement loads, most specific last."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name in source]
    base = import_target(node, module, is_package)
    found = [base] if base in source else []
    return found + [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in source]


def components(graph: Graph) -> list[list[str]]:
    """Tarjan's strongly connected components of ``graph``, each sorted, a component before those that import it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            found.append(sorted(comp))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return found


def _part(module: str, src: Path = SRC) -> str:
    """A package under ``src/trainfit``, or a top-level module; each provider's folder is a part of its own
    (``providers.alibaba``: a provider's writers and refresh sit above the registry the lower layers read)."""
    pieces = module.split(".")
    if len(pieces) > 2 and pieces[1] == "providers" and (src / "providers" / pieces[2] / "__init__.py").is_file():
        return f"providers.{pieces[2]}"
    return pieces[1] if len(pieces) > 1 else "trainfit"


def part_graph(src: Path = SRC) -> tuple[Graph, Graph, Graph]:
    """(imports that run at a module's top, function-local imports, ``TYPE_CHECKING`` imports) between parts, each
    part -> the parts it imports."""
    top: Graph = defaultdict(set)
    local: Graph = defaultdict(set)
    typing: Graph = defaultdict(set)
    source = source_tree(src)
    for module, (tree, is_package) in source.items():
        me = _part(module, src)
        top.setdefault(me, set())
        for node, in_function, typing_only in imports(tree):
            for t in targets(node, module, is_package, source):
                if t == "trainfit" and isinstance(node, ast.ImportFrom):
                    continue  # from trainfit import inputs: the part is inputs (listed next), not the package's root
                if (part := _part(t, src)) != me:
                    (local if in_function else typing if typing_only else top)[me].add(part)
    return dict(top), dict(local), dict(typing)


def _levels(graph: Graph) -> dict[str, int]:
    level: dict[str, int] = {}
    for members in components(graph):  # each after the components it imports
        below = [level[w] for v in members for w in graph.get(v, ()) if w not in members]
        for v in members:
            level[v] = 1 + max(below, default=-1)
    return level


def table(src: Path = SRC) -> str:
    top, local, typing = part_graph(src)
    level = _levels(top)
    rows = ["| level | part | imports (that run, at its top) | inside functions (to defer a heavy extra) | "
            "for annotations only (`TYPE_CHECKING`) |", "|---|---|---|---|---|"]
    for part in sorted(top, key=lambda p: (level[p], p)):
        deferred = sorted(local.get(part, set()) - top[part])
        names = sorted(typing.get(part, set()) - top[part])
        rows.append(f"| {level[part]} | `{part}` | {', '.join(sorted(top[part])) or '—'} | "
                    f"{', '.join(deferred) or '—'} | {', '.join(names) or '—'} |")
    return "\n".join(rows)


def _doc_table(text: str) -> str | None:
    if BEGIN not in text or END not in text:
        return None
    return text.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def main(argv: list[str]) -> int:
    now = table()
    if "--write" in argv:
        text = DOC.read_text(encoding="utf-8")
        if _doc_table(text) is None:
            print(f"{DOC}: no {BEGIN} ... {END} markers", file=sys.stderr)
            return 1
        head, rest = text.split(BEGIN, 1)
        DOC.write_text(f"{head}{BEGIN}\n{now}\n{END}{rest.split(END, 1)[1]}", encoding="utf-8")
        return 0
    if "--check" in argv:
        if _doc_table(DOC.read_text(encoding="utf-8")) != now:
            print("docs/architecture.md's layer table differs from the code: run python tools/layers.py --write",
                  file=sys.stderr)
            return 1
        return 0
    print(now)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
