"""Issue 28 item 1 for the planner, render and the web service layer: under Chinese, rejection reasons and fixes,
the ranking's summary and "why #1", render's summary lines and warnings, and the API's messages are Chinese, while
``code`` fields (rejection codes, error codes) stay English; the job files themselves are the same bytes in both
languages; nothing is cached across languages (en, then zh, then en)."""

from __future__ import annotations

import contextlib
import io
import json
import re

import pytest

from tests._lang import english_sentences
from trainfit import i18n
from trainfit.cli import main

CJK = re.compile(r"[\u4e00-\u9fff]")
CODE = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def _cli_json(argv: list[str]) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(argv)
    return json.loads(out.getvalue())


def _chinese(text: str | None, what: str) -> None:
    assert text and CJK.search(text), f"{what} is not Chinese: {text!r}"
    assert not english_sentences(text), f"{what} has English left: {english_sentences(text)} in {text!r}"


PAI_PUBLIC = ["plan", "Qwen3-32B", "--method", "full", "--tokens", "2B", "--resource-class", "pai-public", "--json"]


def test_plan_rejections_in_chinese_with_english_codes():
    en = _cli_json(PAI_PUBLIC)
    zh = _cli_json(PAI_PUBLIC + ["--lang", "zh"])
    assert [r["code"] for r in zh["rejected"]] == [r["code"] for r in en["rejected"]]
    assert all(CODE.match(r["code"]) for r in zh["rejected"])
    by_code = {r["code"]: r for r in zh["rejected"]}
    nob = by_code["no-bf16"]  # T4 / V100 without --allow-fp16
    _chinese(nob["reason"], "no-bf16 reason")
    _chinese(nob["fix"], "no-bf16 fix")
    assert "--allow-fp16" in nob["fix"] and nob["fix_options"] == [{"allow_fp16": True}]
    for code in ("host-ram", "slow-network", "too-slow"):  # the planner's own limits
        if code in by_code:
            _chinese(by_code[code]["reason"], f"{code} reason")
            _chinese(by_code[code]["fix"], f"{code} fix")
    en_nob = next(r for r in en["rejected"] if r["code"] == "no-bf16")
    assert "has no bf16" in en_nob["reason"] and not CJK.search(en_nob["reason"] + en_nob["fix"])


def test_pai_public_quota_fix_names_the_ignore_rule_flag_in_chinese():
    zh = _cli_json(PAI_PUBLIC + ["--lang", "zh"])
    quota = [r for r in zh["rejected"] if r["code"] == "pai-public-quota"]
    assert quota and all(r["fix"].count("--ignore-rule pai-public-quota") == 1 for r in quota)
    assert all(r["fix_options"] == [{"ignore_rule": ["pai-public-quota"]}] for r in quota)
    from trainfit.rules import get_rule

    assert i18n.is_translated(get_rule("pai-public-quota").fix)
    for r in quota:
        _chinese(r["reason"], "pai-public-quota reason")
        _chinese(r["fix"], "pai-public-quota fix")


def test_ranking_summary_and_why_first_in_chinese():
    zh = _cli_json(["plan", "Qwen3-8B", "--method", "lora", "--tokens", "1B", "--provider", "tencent", "--json",
                    "--lang", "zh"])
    rk = zh["ranking"]
    assert rk["basis"] in ("cost", "gpu_hours", "hours")  # a code, not a word
    _chinese(rk["summary"], "ranking summary")
    _chinese(rk["why_first"], "why #1")
    for prov, how in (rk["price_fix_by_provider"] or {}).items():
        _chinese(how, f"how to price {prov}")


def test_no_text_is_cached_across_languages():
    """Same inputs en, then zh, then en: each answer in its language (a cache keyed without the language would
    hand the second call the first one's text)."""
    from trainfit.options import plan_request_from_values
    from trainfit.service import make_plan, resolve_model

    def run(lang: str):
        with i18n.language(lang):
            req = plan_request_from_values(resolve_model("Qwen3-8B"), {"method": "lora", "tokens": 1e9,
                                                                       "provider": "tencent"})
            res = make_plan(req)
            return res.ranking.summary, next(r.reason for r in res.rejected if r.code == "no-bf16")

    en1, zh, en2 = run("en"), run("zh"), run("en")
    assert en1 == en2 and not CJK.search("".join(en1))
    assert CJK.search(zh[0]) and CJK.search(zh[1])


def _context(lang: str):
    from trainfit.launch import RenderOptions
    from trainfit.service import plan_for, render_plan, resolve_model
    from trainfit.workload import Workload

    with i18n.language(lang):
        plan = plan_for(resolve_model("Qwen3-8B"), Workload(method="lora", packing=False), gpu="A10", tokens=1e8)
        result = render_plan(plan, RenderOptions(), "all")
        return result, result.context.header_lines(), list(result.warnings)


def test_render_summary_in_chinese_and_job_files_unchanged():
    en, en_lines, en_warn = _context("en")
    zh, zh_lines, zh_warn = _context("zh")
    # what render prints (every header line but the machine-readable facts line) is Chinese
    for line in zh_lines[:-1]:
        assert CJK.search(line), line
        assert not english_sentences(line), (english_sentences(line), line)
    assert zh_lines[-1] == en_lines[-1] and zh_lines[-1].startswith("trainfit-plan {")
    assert any("packing" in w for w in en_warn) and zh_warn
    for w in zh_warn:
        _chinese(w, "render warning")
    # the job files are what the tools read: the same bytes in both languages, English comments
    assert zh.files == en.files
    assert not any(CJK.search(text) for text in zh.files.values())
    with i18n.language("zh"):
        from trainfit.launch import readme

        _chinese(readme(zh).split("\n## ")[0].split("\n")[0], "README title")
    # the checkpoint interval's reason follows the language it is shown in, whichever language made the context
    with i18n.language("zh"):
        assert CJK.search(en.context.save_reason_text())
    assert zh.context.save_reason_text().startswith("Young/Daly: a ")


def test_service_language_of_a_request():
    from trainfit.errors import InputError
    from trainfit.service import request_context, request_language

    assert request_language("zh") == "zh" and request_language("en-US") == "en"
    assert request_language(None, "zh-CN,zh;q=0.9,en;q=0.8") == "zh"
    assert request_language(None, "fr-FR, en;q=0.5, zh;q=0.4") == "en"
    assert request_language("en", "zh-CN") == "en"  # the field wins over the header
    with i18n.language("en"):
        assert request_language(None, "fr, de;q=0.5") == "en"  # neither: the server's language
    with pytest.raises(InputError) as e:
        request_language("fr")
    assert e.value.field == "lang" and e.value.code == "bad-input"
    with request_context(None, "zh"):
        assert i18n.current() == "zh"


# ------------------------------------------------------------------------------------------------------ web API
fastapi = pytest.importorskip("fastapi")
pytest.importorskip("httpx")


@pytest.fixture(scope="module")
def client():
    from fastapi.testclient import TestClient

    from trainfit.web.app import create_app

    with TestClient(create_app(), base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        yield c


BODY = {"model": "Qwen3-8B", "method": "lora", "tokens": "1B", "provider": "tencent"}


def test_api_plan_in_the_requested_language(client):
    zh = client.post("/api/plan", json={**BODY, "lang": "zh"})
    en = client.post("/api/plan", json=BODY)
    assert zh.status_code == en.status_code == 200
    zd, ed = zh.json(), en.json()
    assert [r["code"] for r in zd["rejected"]] == [r["code"] for r in ed["rejected"]]
    nob = [r for r in zd["rejected"] if r["code"] == "no-bf16"]
    assert nob
    for r in nob:
        _chinese(r["reason"], "API no-bf16 reason")
        _chinese(r["fix"], "API no-bf16 fix")
    _chinese(zd["ranking"]["summary"], "API ranking summary")
    _chinese(zd["ranking"]["why_first"], "API why #1")
    assert not CJK.search(json.dumps(ed, ensure_ascii=False))  # no lang: the server's language (English here)
    # numbers and codes are the same answer, only the words differ
    assert [p["instance_type"] for p in zd["plans"]] == [p["instance_type"] for p in ed["plans"]]


def test_api_error_in_the_requested_language_with_an_english_code(client):
    r = client.post("/api/plan", json={"lang": "zh", "method": "lora"})  # no model: the service's own error
    assert r.status_code == 422
    err = r.json()["error"]
    assert err["code"] == "bad-workload"
    _chinese(err["message"], "API error message")
    _chinese(err["fix"], "API error fix")
    r = client.post("/api/plan", json={"method": "lora"})
    assert r.json()["error"]["code"] == "bad-workload" and r.json()["error"]["message"] == "no model given"


def test_api_bad_lang_points_at_the_field(client):
    r = client.post("/api/plan", json={**BODY, "lang": "fr"})
    assert r.status_code == 422
    err = r.json()["error"]
    assert err["field"] == "lang" and err["code"] == "bad-input" and "zh" in err["fix"]


def test_api_render_zip_readme_in_chinese_job_files_english(client):
    import zipfile

    body = {"model": "Qwen3-8B", "method": "lora", "gpu": "A10", "tokens": "100M"}
    zh = client.post("/api/render", json={**body, "lang": "zh"})
    en = client.post("/api/render", json=body)
    assert zh.status_code == en.status_code == 200
    zf, ef = (zipfile.ZipFile(io.BytesIO(x.content)) for x in (zh, en))
    names = [n for n in zf.namelist() if not n.endswith("README.md")]
    assert names == [n for n in ef.namelist() if not n.endswith("README.md")]
    for n in names:
        assert zf.read(n) == ef.read(n), n
    assert CJK.search(zf.read("trainfit-job/README.md").decode())
