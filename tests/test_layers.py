"""Imports that show the layers (issue 30), strictly:

(a) no function-local import of a trainfit module, unless that module imports at its top, directly or through the
    trainfit modules it imports at its top, a heavy optional third-party package (:func:`heavy_packages`: the
    top-level names of the distributions in pyproject's optional extras); deferring one is the only reason for a
    local import;
(b) no private name (``_x``; the ``_`` of gettext is not one) or private module imported across packages;
(c) no circle of files: Tarjan's strongly connected components over every import statement, top, local or under
    ``TYPE_CHECKING`` (but the type-only edges :data:`TYPE_ONLY_EDGES` names, each with its reason); and no circle
    through the ``__init__`` files the imports that run load.

Each scanner works on a :data:`Source` (module name -> parsed file, is-a-package) so that
:func:`test_the_checks_see_what_they_claim` can feed it a tiny synthetic package and see it fire. The statements are
read by ``tools/layers.py``, which also draws docs/architecture.md's layer table from them: the last tests here check
that the table and the doc's list of parts match the code.
"""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import importlib.util
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Type-only imports allowed to close a circle of files, as (importing module, imported module); the list may only
#: shrink. The one left: the render-target registry (``targets.py``, below the planner, which reads it) names the
#: context a writer receives (``launch.kit.RenderContext``) in its ``Writer`` protocol, under ``if TYPE_CHECKING:``;
#: the writers sit above the planner (their context holds the typed Plan). Nothing imports in that direction at run
#: time, and no circle runs through packages' ``__init__`` files.
TYPE_ONLY_EDGES: frozenset[tuple[str, str]] = frozenset({
    ("trainfit.targets", "trainfit.launch.kit"),
})

def _tool():
    """``tools/layers.py``: the import scanner this test and the architecture doc's layer table share."""
    spec = importlib.util.spec_from_file_location("trainfit_tools_layers", ROOT / "tools" / "layers.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


layers = _tool()
Source = layers.Source
source_tree = layers.source_tree


def _package(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else ""


def _loaded(targets: list[str], mod: str, src: Source) -> set[str]:
    """``targets`` and the packages above them that importing them initialises: those that are not packages above
    ``mod`` (importing ``trainfit.check.facts`` from ``trainfit.rules`` runs ``trainfit/check/__init__.py``)."""
    own = {".".join(mod.split(".")[:i]) for i in range(1, mod.count(".") + 1)}
    above = {".".join(t.split(".")[:i]) for t in targets for i in range(1, t.count(".") + 1)}
    return (above - own) & src.keys() | set(targets)


def _external(node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name.split(".")[0] for a in node.names]
    return [] if node.level or not node.module else [node.module.split(".")[0]]


def _dist_key(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def heavy_packages() -> frozenset[str]:
    """Top-level import names of the distributions in pyproject's optional extras (the test tools' extra aside)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    req_name = re.compile(r"[A-Za-z0-9._-]+")
    optional = {_dist_key(req_name.match(r).group()) for extra, reqs in project["optional-dependencies"].items()
                if extra != "test" for r in reqs}
    tops = {top for top, dists in metadata.packages_distributions().items()
            if any(_dist_key(d) in optional for d in dists)}
    return frozenset(tops | optional)


def heavy_modules(src: Source, heavy: frozenset[str]) -> set[str]:
    """The project's modules whose import loads a heavy package (through their top imports and parent packages)."""
    deps: dict[str, set[str]] = {}
    out: set[str] = set()
    for mod, (tree, is_pkg) in src.items():
        top = [n for n, local, typing_only in layers.imports(tree) if not local and not typing_only]
        deps[mod] = {t for n in top for t in layers.targets(n, mod, is_pkg, src)}
        deps[mod] |= {".".join(mod.split(".")[:i]) for i in range(1, mod.count(".") + 1)} & src.keys()
        if any(x in heavy for n in top for x in _external(n)):
            out.add(mod)
    grew = True
    while grew:
        grew = False
        for mod, ds in deps.items():
            if mod not in out and ds & out:
                out.add(mod)
                grew = True
    return out


def needless_local_imports(src: Source, heavy: frozenset[str]) -> list[tuple[str, int, str]]:
    """(module, line, imported module) for each function-local import of a module that defers nothing heavy."""
    heavy_mods = heavy_modules(src, heavy)
    out = []
    for mod, (tree, is_pkg) in src.items():
        for node, local, _typing_only in layers.imports(tree):
            targets = layers.targets(node, mod, is_pkg, src)
            if local and targets and targets[-1] not in heavy_mods:
                out.append((mod, node.lineno, targets[-1]))
    return sorted(out)


def private_imports(src: Source) -> set[tuple[str, str, str]]:
    """(importing module, imported module, name) for private names and modules imported across packages."""
    out = set()
    for mod, (tree, is_pkg) in src.items():
        for node, _local, _typing_only in layers.imports(tree):
            if isinstance(node, ast.Import):
                pairs = [(a.name, None) for a in node.names]
            else:
                pairs = [(layers.import_target(node, mod, is_pkg), a.name) for a in node.names]
            for target, name in pairs:
                if not target.startswith("trainfit") or _package(target) == _package(mod):
                    continue
                if any(x.startswith("_") and not x.startswith("__") for x in target.split(".")[2:]):
                    out.add((mod, target, "<module>"))
                if name and name.startswith("_") and name != "_" and not name.startswith("__"):
                    out.add((mod, target, name))
    return out


def import_cycles(src: Source, *, through_packages: bool = False,
                  type_only_allowed: frozenset[tuple[str, str]] = frozenset()) -> list[list[str]]:
    """Tarjan's strongly connected components (more than one file) of the graph of every import statement but the
    ``TYPE_CHECKING`` ones in ``type_only_allowed``; with ``through_packages``, only the imports that run, each also
    reaching the packages whose ``__init__`` it runs (:func:`_loaded`)."""
    def reached(node: ast.Import | ast.ImportFrom, mod: str, is_pkg: bool) -> set[str]:
        targets = layers.targets(node, mod, is_pkg, src)
        return _loaded(targets, mod, src) if through_packages else set(targets)

    # through packages, only the imports that run count: a TYPE_CHECKING import loads no package's __init__
    edges = {mod: {t for n, _l, typing_only in layers.imports(tree) if not (through_packages and typing_only)
                   for t in reached(n, mod, is_pkg)
                   if t != mod and not (typing_only and (mod, t) in type_only_allowed)}
             for mod, (tree, is_pkg) in src.items()}
    return sorted(c for c in layers.components(edges) if len(c) > 1)


def test_no_private_import_across_packages():
    found = sorted(private_imports(source_tree()))
    assert not found, f"private names or modules imported across packages (make them public, or move them): {found}"


def test_function_local_imports_defer_a_heavy_dependency():
    found = needless_local_imports(source_tree(), heavy_packages())
    assert not found, ("function-local imports of trainfit modules that defer no heavy optional dependency "
                       f"(import them at the top): {found}")


def type_only_edges(src: Source) -> set[tuple[str, str]]:
    """(importing module, imported module) of every import made only under ``if TYPE_CHECKING:``."""
    out = set()
    for mod, (tree, is_pkg) in src.items():
        runs = {t for n, _l, typing_only in layers.imports(tree) if not typing_only for t in layers.targets(n, mod, is_pkg, src)}
        out |= {(mod, t) for n, _l, typing_only in layers.imports(tree) if typing_only
                for t in layers.targets(n, mod, is_pkg, src) if t not in runs}
    return out


def test_no_circle_of_files():
    src = source_tree()
    found = import_cycles(src, type_only_allowed=TYPE_ONLY_EDGES)
    assert not found, f"files that import each other (counting function-local and TYPE_CHECKING imports): {found}"
    stale = sorted(TYPE_ONLY_EDGES - type_only_edges(src))
    assert not stale, f"these are no longer type-only imports: remove them from TYPE_ONLY_EDGES: {stale}"
    needless = sorted(e for e in TYPE_ONLY_EDGES
                      if not import_cycles(src, type_only_allowed=TYPE_ONLY_EDGES - {e}))
    assert not needless, f"these type-only imports close no circle: remove them from TYPE_ONLY_EDGES: {needless}"


def test_no_circle_through_package_inits():
    found = import_cycles(source_tree(), through_packages=True)
    assert not found, f"modules that import each other through packages' __init__ files: {found}"


def test_the_heavy_set_comes_from_the_extras():
    heavy = heavy_packages()
    assert {"torch", "transformers", "fastapi", "uvicorn", "pyarrow", "tencentcloud"} <= heavy
    assert not heavy & {"yaml", "rich", "json", "trainfit"}


def _fake(files: dict[str, str]) -> Source:
    return {mod: (ast.parse(text), pkg) for (mod, pkg), text in
            (((m.removesuffix("/"), m.endswith("/")), t) for m, t in files.items())}


def test_the_checks_see_what_they_claim():
    """Each scanner fires on a tiny synthetic package, and stays quiet on its fixed version."""
    src = _fake({
        "trainfit/": "",
        "trainfit.a/": "",
        "trainfit.a._inner": "import torch\nx = 1\n",
        "trainfit.a.light": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n_hidden = 0\n",
        "trainfit.a.uses_heavy": "def f():\n    from trainfit.b.deep import z\n",
        "trainfit.b/": "from trainfit.a._inner import x\n",
        "trainfit.b.deep": "z = 3\n",
        "trainfit.c": "def g():\n    from trainfit.d import w\n",
        "trainfit.d": "from trainfit.c import g\nw = 4\n",
        "trainfit.e": "from trainfit.a.light import _hidden\n",
        "trainfit.p/": "from trainfit.p.q import u\n",
        "trainfit.p.q": "from trainfit.r.s import v\nu = 5\n",
        "trainfit.r/": "from trainfit.p import u\n",
        "trainfit.r.s": "v = 6\n",
    })
    heavy = frozenset({"torch"})
    assert heavy_modules(src, heavy) == {"trainfit.a._inner", "trainfit.b", "trainfit.b.deep"}
    assert needless_local_imports(src, heavy) == [("trainfit.c", 2, "trainfit.d")]
    assert private_imports(src) == {("trainfit.b", "trainfit.a._inner", "<module>"),
                                    ("trainfit.e", "trainfit.a.light", "_hidden")}
    assert import_cycles(src) == [["trainfit.c", "trainfit.d"]]
    # importing trainfit.r.s from trainfit.p.q runs trainfit/r/__init__.py, which imports trainfit.p
    assert import_cycles(src, through_packages=True) == [["trainfit.c", "trainfit.d"],
                                                         ["trainfit.p", "trainfit.p.q", "trainfit.r"]]
    # a circle closed by a TYPE_CHECKING import: a circle of files, allowed only when that edge is named; it runs
    # no package's __init__
    typed = _fake({"trainfit/": "", "trainfit.f": "from trainfit.g import y\n",
                   "trainfit.g": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from trainfit.f import k\ny = 7\n"})
    assert import_cycles(typed) == [["trainfit.f", "trainfit.g"]]
    assert type_only_edges(typed) == {("trainfit.g", "trainfit.f")}
    assert not import_cycles(typed, type_only_allowed=frozenset({("trainfit.g", "trainfit.f")}))
    assert not import_cycles(typed, through_packages=True)
    fixed = _fake({"trainfit/": "", "trainfit.c": "from trainfit.d import w\n", "trainfit.d": "w = 4\n"})
    assert not needless_local_imports(fixed, heavy) and not private_imports(fixed)
    assert not import_cycles(fixed, through_packages=True)


# ------------------------------------------------------------------ docs/architecture.md is drawn from the code
def test_the_architecture_docs_layer_table_is_the_codes():
    assert layers.main(["--check"]) == 0, "run python tools/layers.py --write"


def test_every_part_has_a_row_in_the_architecture_doc():
    parts = set(layers.part_graph()[0])
    text = layers.DOC.read_text(encoding="utf-8").split("## Every part", 1)[1].split("\n## ", 1)[0]
    named = {name for row in text.splitlines() if row.startswith("| `")
             for name in re.findall(r"`([\w.]+)`", row.split("|")[1])}
    assert parts - named == set(), f"parts without a row in docs/architecture.md's 'Every part': {parts - named}"
    assert named - parts == set(), f"rows naming no part of src/trainfit: {named - parts}"


def test_the_layer_table_follows_the_imports(tmp_path):
    """The tool sees a new import between parts, and a type-only one apart."""
    src = tmp_path / "trainfit"
    (src / "low").mkdir(parents=True)
    (src / "__init__.py").write_text("")
    (src / "low" / "__init__.py").write_text("")
    (src / "high.py").write_text("from trainfit.low import x\n")
    (src / "typed.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from trainfit.high import y\n")
    top, _local, typing = layers.part_graph(src)
    assert top["high"] == {"low"} and typing["typed"] == {"high"} and not top["typed"]
    assert "| 1 | `high` | low |" in layers.table(src)
