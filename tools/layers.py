"""The layers as the code draws them: which part of trainfit imports which, read from the source's import statements.

    python tools/layers.py            print the table (markdown)
    python tools/layers.py --write    replace the table between the markers in docs/architecture.md
    python tools/layers.py --check    exit 1 when docs/architecture.md's table differs from the code

A *part* is a package under ``src/trainfit`` (``estimate``, ``plan``...) or a top-level module (``service``,
``options``...). Its *level* is 0 when it imports no other part, else one more than the highest level it imports
(parts that import each other share a level and are listed together). ``tests/test_architecture_doc.py`` runs
``--check`` so the drawing in the docs cannot drift from the code.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "trainfit"
DOC = ROOT / "docs" / "architecture.md"
BEGIN = "<!-- layers:begin (python tools/layers.py --write) -->"
END = "<!-- layers:end -->"


def _module(path: Path, src: Path) -> str:
    parts = list(path.relative_to(src.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _part(module: str, src: Path = SRC) -> str:
    """A package under ``src/trainfit``, or a top-level module; each provider's folder is a part of its own
    (``providers.alibaba``: a provider's writers and refresh sit above the registry the lower layers read)."""
    pieces = module.split(".")
    if len(pieces) > 2 and pieces[1] == "providers" and (src / "providers" / pieces[2] / "__init__.py").is_file():
        return f"providers.{pieces[2]}"
    return pieces[1] if len(pieces) > 1 else "trainfit"


def _is_part(src: Path, name: str) -> bool:
    path = src.joinpath(*name.split("."))
    return (path / "__init__.py").is_file() or path.with_suffix(".py").is_file()


def _target(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports_under(nodes: list[ast.AST]) -> set[int]:
    return {id(n) for node in nodes for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))}


def _in_function(tree: ast.Module) -> set[int]:
    return _imports_under([fn for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))])


def _type_only(tree: ast.Module) -> set[int]:
    """Imports under ``if TYPE_CHECKING:`` (they name types for annotations and do not run)."""
    blocks = [n for n in ast.walk(tree) if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)]
    return _imports_under([stmt for b in blocks for stmt in b.body])


Graph = dict[str, set[str]]


def part_graph(src: Path = SRC) -> tuple[Graph, Graph, Graph]:
    """(imports that run at a module's top, function-local imports, ``TYPE_CHECKING`` imports) between parts, each
    part -> the parts it imports."""
    top: Graph = defaultdict(set)
    local: Graph = defaultdict(set)
    typing: Graph = defaultdict(set)
    for path in sorted(src.rglob("*.py")):
        module = _module(path, src)
        me = _part(module, src)
        top.setdefault(me, set())
        tree = ast.parse(path.read_text(encoding="utf-8"))
        inside, type_only = _in_function(tree), _type_only(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                targets = [_target(node, module, path.name == "__init__.py")]
                if targets[0] == "trainfit":  # from trainfit import x: x is the part
                    targets = [f"trainfit.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for t in targets:
                part = _part(t, src)
                if t.startswith("trainfit.") and part != me and _is_part(src, part):
                    kind = local if id(node) in inside else typing if id(node) in type_only else top
                    kind[me].add(part)
    return dict(top), dict(local), dict(typing)


def _levels(graph: dict[str, set[str]]) -> dict[str, int]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    comp: dict[str, int] = {}
    comps: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w not in comp and w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = []
            while True:
                w = stack.pop()
                comp[w] = len(comps)
                members.append(w)
                if w == v:
                    break
            comps.append(members)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    level: dict[int, int] = {}
    for c, members in enumerate(comps):  # Tarjan emits components bottom first
        below = {comp[w] for v in members for w in graph.get(v, ()) if comp[w] != c}
        level[c] = 1 + max((level[b] for b in below), default=-1)
    return {v: level[comp[v]] for v in graph}


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
