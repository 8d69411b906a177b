"""Imports that show the layers (issue 30), enforced as a ratchet while the redesign goes on:

* no package imports a private name (``_x``) or a private module of *another* package, except the pairs listed in
  :data:`PRIVATE_ALLOWED` (each one a seam still to be made public; the list may only shrink);
* no module adds function-local imports of the project's own modules beyond its count in
  ``tests/data/local_imports_baseline.json`` (deferring a heavy optional dependency is what they are for; the counts
  may only fall: rerun with ``TRAINFIT_WRITE_IMPORT_BASELINE=1`` after removing some).

The ``_`` of gettext is not a private name.
"""

from __future__ import annotations

import ast
import json
import os
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "trainfit"
BASELINE = ROOT / "tests" / "data" / "local_imports_baseline.json"

#: (importing module, imported module, name) pairs still allowed across packages.
PRIVATE_ALLOWED: frozenset[tuple[str, str, str]] = frozenset({
    ('trainfit._cli.diagnose', 'trainfit.diagnose', '_plan_prediction'),
    ('trainfit.diagnose_tokens', 'trainfit.diagnose', '_median'),
    ('trainfit.diagnose_tokens', 'trainfit.diagnose', '_vals'),
    ('trainfit.metrics_file', 'trainfit.inputs', '_json_depth_ok'),
    ('trainfit.providers.alibaba.refresh', 'trainfit.catalog.cache', '_gpu_update_columns'),
    ('trainfit.service', 'trainfit.service_web', '_config_value'),
    ('trainfit.service', 'trainfit.service_web', '_opt_str'),
})


def _module(p: Path) -> str:
    parts = list(p.relative_to(SRC.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else ""


def _target(node: ast.ImportFrom, mod: str, is_pkg: bool) -> str:
    if not node.level:
        return node.module or ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _modules():
    for p in sorted(SRC.rglob("*.py")):
        yield p, _module(p), ast.parse(p.read_text(encoding="utf-8"))


def private_imports() -> set[tuple[str, str, str]]:
    out = set()
    for p, mod, tree in _modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            target = _target(node, mod, p.name == "__init__.py")
            if not target.startswith("trainfit") or _package(target) == _package(mod):
                continue
            if any(x.startswith("_") and not x.startswith("__") for x in target.split(".")[2:]):
                out.add((mod, target, "<module>"))
            out |= {(mod, target, a.name) for a in node.names
                    if a.name.startswith("_") and a.name != "_" and not a.name.startswith("__")}
    return out


def local_imports() -> Counter:
    """Function-local imports of the project's own modules, per module."""
    counts: Counter = Counter()
    for p, mod, tree in _modules():
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom):
                    if _target(node, mod, p.name == "__init__.py").startswith("trainfit"):
                        counts[mod] += 1
                elif isinstance(node, ast.Import) and any(a.name.startswith("trainfit") for a in node.names):
                    counts[mod] += 1
    return counts


def test_no_new_private_import_across_packages():
    found = private_imports()
    new = sorted(found - PRIVATE_ALLOWED)
    assert not new, f"private names imported across packages (make them public): {new}"
    gone = sorted(PRIVATE_ALLOWED - found)
    assert not gone, f"these seams are public now: remove them from PRIVATE_ALLOWED: {gone}"


def test_function_local_imports_only_fall():
    now = local_imports()
    if os.environ.get("TRAINFIT_WRITE_IMPORT_BASELINE"):
        BASELINE.parent.mkdir(parents=True, exist_ok=True)
        BASELINE.write_text(json.dumps(dict(sorted(now.items())), indent=1) + "\n", encoding="utf-8")
    base = json.loads(BASELINE.read_text(encoding="utf-8"))
    grew = {m: (base.get(m, 0), n) for m, n in now.items() if n > base.get(m, 0)}
    assert not grew, (f"function-local imports of trainfit modules grew (baseline, now): {grew}; import at the top, "
                      "or defer only a heavy optional dependency")


def test_the_checks_see_what_they_claim(tmp_path):
    """The scanners find a private cross-package import and a function-local one when there is one."""
    tree = ast.parse("def f():\n    from trainfit.catalog._store import x\n")
    fn = tree.body[0]
    node = fn.body[0]
    assert _target(node, "trainfit.plan.search", False) == "trainfit.catalog._store"
    assert private_imports() >= {("trainfit._cli.diagnose", "trainfit.diagnose", "_plan_prediction")}
    assert local_imports()["trainfit.service"] > 0
