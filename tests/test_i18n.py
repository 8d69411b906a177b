"""The message catalogs: every message id has a Chinese entry, the compiled catalog is current, ids are literals
with named placeholders that the translation keeps, and the language is chosen as documented."""

from __future__ import annotations

import ast
import importlib.util
import re
import string
import sys
from pathlib import Path

import pytest

from trainfit import i18n
from trainfit.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "trainfit"


def _tool():
    spec = importlib.util.spec_from_file_location("trainfit_i18n_tool", ROOT / "tools" / "i18n.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def tool():
    pytest.importorskip("babel")
    return _tool()


AREAS = sorted({p.name.removesuffix(".py") for p in SRC.iterdir()
                if (p.is_dir() and p.name not in ("locale", "__pycache__")) or (p.suffix == ".py")})


@pytest.fixture(scope="module")
def untranslated(tool):
    return tool.missing()


@pytest.mark.parametrize("area", AREAS)
def test_every_message_id_has_a_chinese_translation(tool, untranslated, area):
    left = [m for m in untranslated if any(tool.area_of(loc[0]) == area for loc in m.locations)]
    assert not left, f"{len(left)} message ids have no Chinese entry in locale/zh_CN/parts/*.po " \
                     f"(`python tools/i18n.py missing` lists them), e.g. " + \
                     "; ".join(f"{m.locations[0][0]}: {tool._key(m.id)!r}" for m in left[:8])


def test_compiled_catalog_is_current(tool):
    assert tool.MO.exists(), "run `python tools/i18n.py build`"
    assert tool.MO.read_bytes() == tool.compile_mo(), "locale/zh_CN/LC_MESSAGES/trainfit.mo is stale: " \
                                                      "run `python tools/i18n.py build` and commit it"


def _fields(text: str) -> set[str]:
    out = set()
    for _lit, name, _spec, _conv in string.Formatter().parse(text):
        if name is not None:
            out.add(name)
    return out


def test_translations_keep_the_placeholders(tool):
    merged, problems = tool.merged_parts()
    assert not problems
    bad = []
    for m in merged:
        if not m.id:
            continue
        ids = m.id if isinstance(m.id, tuple) else (m.id,)
        strs = m.string if isinstance(m.string, tuple) else (m.string,)
        try:
            want = _fields(ids[0])
        except ValueError:  # not a format string (a literal brace); then the translation must not be one either
            continue
        for s in strs:
            try:
                got = _fields(s)
            except ValueError as e:
                bad.append(f"{ids[0]!r}: {e}")
                continue
            if got != want:
                bad.append(f"{ids[0]!r}: placeholders {sorted(want)} vs {sorted(got)} in {s!r}")
    assert not bad, "\n".join(bad[:20])


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("_", "N_", "ngettext"):
            yield node


def test_message_ids_are_literals():
    """``_(f"...")`` or ``_(variable)`` cannot be extracted, so it would never be translated."""
    bad = []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "_(" not in text:
            continue
        for node in _calls(ast.parse(text)):
            n = 2 if node.func.id == "ngettext" else 1
            args = node.args[:n]
            if len(args) < n or not all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in args):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not bad, "message ids must be string literals: " + ", ".join(bad)


@pytest.mark.parametrize("env, want", [
    ({}, "en"),
    ({"LANG": "zh_CN.UTF-8"}, "zh"),
    ({"LANG": "en_US.UTF-8", "LC_ALL": "zh_TW.UTF-8"}, "zh"),
    ({"LANG": "zh_CN.UTF-8", "LC_ALL": "C"}, "en"),
    ({"LANGUAGE": "zh_CN:en", "LANG": "C.UTF-8"}, "zh"),
    ({"TRAINFIT_LANG": "en", "LANGUAGE": "zh_CN"}, "en"),
    ({"LANG": ""}, "en"),
    ({"LANG": "fr_FR.UTF-8"}, "en"),
])
def test_language_from_environment(env, want):
    assert i18n.from_env(env) == want


def test_explicit_language_wins_and_resets(monkeypatch):
    monkeypatch.setenv("TRAINFIT_LANG", "en")
    assert i18n.current() == "en"
    with i18n.language("zh"):
        assert i18n.current() == "zh"
        assert i18n._("use --lang en or --lang zh") != "use --lang en or --lang zh"
    assert i18n.current() == "en"
    assert i18n._("use --lang en or --lang zh") == "use --lang en or --lang zh"


@pytest.mark.parametrize("text, want", [("zh", "zh"), ("zh-CN", "zh"), ("zh_CN.UTF-8", "zh"), ("en", "en"),
                                        ("EN-us", "en")])
def test_parse_lang(text, want):
    assert i18n.parse_lang(text) == want


def test_parse_lang_rejects_with_a_suggestion():
    with pytest.raises(InputError) as e:
        i18n.parse_lang("zhh")
    assert "zh" in (e.value.fix or "")


def test_cli_lang_anywhere_and_bad_value(capsys):
    from trainfit.cli import main

    assert main(["--lang", "zh", "--help"]) == 0
    out = capsys.readouterr().out
    assert "打印版本号并退出" in out
    assert main(["models", "--lang=xx"]) == 2
    err = capsys.readouterr().err
    assert "--lang" in err and "en" in err and "zh" in err
    assert main(["--json", "models", "--lang"]) == 2
    assert '"code": "bad-input"' in capsys.readouterr().out
