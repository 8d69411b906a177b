"""Manage trainfit's message catalogs (gettext, with Babel).

    python tools/i18n.py extract        # write src/trainfit/locale/trainfit.pot from the source (pybabel's extractor)
    python tools/i18n.py build          # extract, merge locale/zh_CN/parts/*.po, compile LC_MESSAGES/trainfit.mo
    python tools/i18n.py missing [AREA] # the ids without a Chinese entry (optionally only those used under AREA)
    python tools/i18n.py stub AREA      # append the missing ids used under src/trainfit/AREA to parts/AREA.po

Babel is a development/test dependency only (the ``test`` extra); the installed package ships the compiled ``.mo``
and reads it with the standard library. Message ids come from calls to ``_``, ``N_``, ``gettext_in`` (2nd
argument) and ``ngettext`` in ``src/trainfit`` and from the ``message:``/``fix:`` fields of the platform rules
(``providers/*/rules.yaml``), which are data, translated where they are shown.
"""

from __future__ import annotations

import io
import sys
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "trainfit"
LOCALE = PKG / "locale"
POT = LOCALE / "trainfit.pot"
PARTS = LOCALE / "zh_CN" / "parts"
MO = LOCALE / "zh_CN" / "LC_MESSAGES" / "trainfit.mo"
FIXED_DATE = datetime(2026, 1, 1, tzinfo=timezone.utc)  # headers carry no build time: the outputs are reproducible
KEYWORDS = {"_": None, "N_": None, "ngettext": (1, 2), "gettext_in": (2,)}
YAML_FIELDS = ("message", "fix", "title", "label", "why")


def _scanned_dir(dirpath: str) -> bool:
    """Babel skips folders starting with '_' by default: trainfit's ``_cli`` package holds messages too."""
    name = Path(dirpath).name
    return not name.startswith(".") and name != "__pycache__"


def _python_messages():
    """(msgid or (singular, plural), path, line) for every marked literal under src/trainfit."""
    from babel.messages.extract import extract_from_dir

    method_map = [("**/locale/**", "ignore"), ("**.py", "python")]
    for filename, lineno, message, _comments, _ctx in extract_from_dir(
            str(PKG), method_map=method_map, keywords=KEYWORDS, comment_tags=("i18n:",), strip_comment_tags=True,
            directory_filter=_scanned_dir):
        yield message, f"src/trainfit/{filename}", lineno


def _yaml_messages():
    """The translatable fields of the platform rule files (data, not code)."""
    import yaml

    for path in sorted(PKG.glob("providers/*/rules.yaml")):
        docs = yaml.safe_load(path.read_text(encoding="utf-8"))
        stack = [docs]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                for k, v in node.items():
                    if k in YAML_FIELDS and isinstance(v, str) and v.strip():
                        yield v, str(path.relative_to(ROOT)), 0
                    else:
                        stack.append(v)
            elif isinstance(node, list):
                stack.extend(node)


def template():
    """The catalog template: every message id with where it is used."""
    from babel.messages.catalog import Catalog

    cat = Catalog(project="trainfit", domain="trainfit", charset="utf-8", fuzzy=False, creation_date=FIXED_DATE,
                  revision_date=FIXED_DATE)
    for message, path, line in list(_python_messages()) + list(_yaml_messages()):
        if isinstance(message, tuple):
            if not all(message):
                continue
        elif not message:
            continue
        cat.add(message, locations=[(path, line)])
    return cat


def _read_po(path: Path):
    from babel.messages.pofile import read_po

    with path.open("rb") as f:
        return read_po(f, locale="zh_CN", domain="trainfit")


def merged_parts():
    """All parts/*.po merged into one catalog; an id translated differently in two parts is an error."""
    from babel.messages.catalog import Catalog

    out = Catalog(locale="zh_CN", domain="trainfit", project="trainfit", charset="utf-8", fuzzy=False,
                  creation_date=FIXED_DATE, revision_date=FIXED_DATE)
    seen: dict = {}
    problems = []
    for path in sorted(PARTS.glob("*.po")):
        for msg in _read_po(path):
            if not msg.id:
                continue
            if not msg.string or (isinstance(msg.string, tuple) and not all(msg.string)):
                continue
            key = msg.id
            if key in seen and seen[key][0] != msg.string:
                problems.append(f"{path.name} and {seen[key][1]} translate {key!r} differently")
                continue
            seen[key] = (msg.string, path.name)
            if key not in out:
                out.add(msg.id, msg.string)
    return out, problems


def _key(mid):
    return mid[0] if isinstance(mid, tuple) else mid


def area_of(path: str) -> str:
    """The area a source path belongs to: its package under src/trainfit (``plan``, ``providers``...) or its
    top-level module (``cli``, ``workload``...); rules files belong to ``providers``."""
    rel = path.removeprefix("src/trainfit/")
    head = rel.split("/")[0]
    return head.removesuffix(".py")


def missing(area: str | None = None) -> list:
    tmpl = template()
    merged, _ = merged_parts()
    have = {_key(m.id) for m in merged if m.id}
    out = []
    for m in tmpl:
        if not m.id or _key(m.id) in have:
            continue
        if area and not any(loc[0].startswith((f"src/trainfit/{area}", f"src/trainfit/{area}.py"))
                            for loc in m.locations):
            continue
        out.append(m)
    return out


def compile_mo() -> bytes:
    from babel.messages.mofile import write_mo

    merged, problems = merged_parts()
    if problems:
        raise SystemExit("\n".join(problems))
    buf = io.BytesIO()
    write_mo(buf, merged, use_fuzzy=False)
    return buf.getvalue()


def write_template() -> None:
    from babel.messages.pofile import write_po

    POT.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    write_po(buf, template(), omit_header=False, sort_output=True, width=0, include_lineno=False)
    POT.write_bytes(buf.getvalue())


def build() -> int:
    write_template()
    MO.parent.mkdir(parents=True, exist_ok=True)
    MO.write_bytes(compile_mo())
    left = missing()
    print(f"wrote {POT.relative_to(ROOT)} and {MO.relative_to(ROOT)}; {len(left)} ids without Chinese")
    return 0


def stub(area: str) -> int:
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import write_po

    path = PARTS / f"{area.replace('/', '_').removesuffix('.py')}.po"
    cat = _read_po(path) if path.exists() else Catalog(locale="zh_CN", domain="trainfit", project="trainfit",
                                                                 charset="utf-8", fuzzy=False)
    n = 0
    for m in missing(area):
        if m.id not in cat:
            cat.add(m.id, ("", "") if isinstance(m.id, tuple) else "", locations=m.locations)
            n += 1
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.BytesIO()
    write_po(buf, cat, width=0, include_lineno=False)
    path.write_bytes(buf.getvalue())
    print(f"{path.relative_to(ROOT)}: {n} empty entries added")
    return 0


def main(argv: list[str]) -> int:
    cmd = argv[0] if argv else "build"
    if cmd == "extract":
        write_template()
        return 0
    if cmd == "build":
        return build()
    if cmd == "missing":
        left = missing(argv[1] if len(argv) > 1 else None)
        for m in left:
            print(f"{m.locations[0][0]}: {_key(m.id)!r}")
        print(f"{len(left)} ids without Chinese", file=sys.stderr)
        return 1 if left else 0
    if cmd == "stub" and len(argv) > 1:
        return stub(argv[1])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
