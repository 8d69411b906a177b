"""The page and the API in two languages: the page's labels come from the one gettext catalog (GET /api/labels),
every request is answered in the language it asks for (``?lang=``, else ``Accept-Language``), codes stay English.
The browser side (the 中文 switch, the DOM text) is in test_page.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from tests._lang import english_sentences  # noqa: E402
from trainfit import i18n  # noqa: E402
from trainfit.service_web import preferred_language as accept_language  # noqa: E402
from trainfit.web.app import create_app  # noqa: E402
from trainfit.web.labels import LABELS  # noqa: E402

STATIC = Path(__file__).resolve().parents[2] / "src" / "trainfit" / "web" / "static"
HAN = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def client():
    with TestClient(create_app(), base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        yield c


def test_labels_in_both_languages_from_the_catalog(client):
    en = client.get("/api/labels?lang=en").json()
    zh = client.get("/api/labels?lang=zh").json()
    assert en == LABELS  # English: the ids themselves
    assert set(zh) == set(en)
    for key, text in zh.items():
        assert english_sentences(text) == [], (key, text)
        assert text == i18n.gettext_in("zh", LABELS[key])
        assert set(re.findall(r"\{\w+\}", text)) == set(re.findall(r"\{\w+\}", LABELS[key])), key
    # a label of words is Chinese (names and units such as GPU, tok/s, MFU, # stay as they are)
    worded = [k for k, v in en.items() if len(re.findall(r"[a-z]{3,}", v)) >= 2]
    assert worded and all(HAN.search(zh[k]) for k in worded), [k for k in worded if not HAN.search(zh[k])]


def test_labels_follow_accept_language_and_the_query_wins(client):
    assert client.get("/api/labels", headers={"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.8"}).json()["btn_plan"] == "规划"
    assert client.get("/api/labels", headers={"Accept-Language": "en-US,en;q=0.9,zh;q=0.8"}).json()["btn_plan"] == "Plan"
    assert client.get("/api/labels?lang=en", headers={"Accept-Language": "zh-CN"}).json()["btn_plan"] == "Plan"
    assert client.get("/api/labels").json()["btn_plan"] == "Plan"  # the test environment is English


@pytest.mark.parametrize("header, want", [
    ("zh-CN,zh;q=0.9,en;q=0.8", "zh"), ("en-US,en;q=0.9,zh;q=0.8", "en"), ("fr-FR,zh;q=0.5,en;q=0.4", "zh"),
    ("en;q=0.2, zh-TW;q=0.7", "zh"), ("de, fr", None), ("", None), (None, None), ("zh;q=0", None), ("*", None),
    ("zh;q=abc, en", "en"),
])
def test_accept_language(header, want):
    assert accept_language(header) == want


def test_bad_lang_is_a_422_naming_the_field(client):
    r = client.get("/api/labels?lang=fr")
    assert r.status_code == 422
    err = r.json()["error"]
    assert err["code"] == "bad-input" and err["field"] == "lang" and err["fix"]
    assert client.get("/?lang=fr").status_code == 200  # the page itself still loads


def test_server_messages_in_the_requested_language_codes_in_english(client):
    """The web server's own messages (JSON type errors, refusals) through the catalog; the code stays English."""
    en = client.post("/api/memory?lang=en", json={"model": ["Qwen3-8B"]}).json()["error"]
    zh = client.post("/api/memory?lang=zh", json={"model": ["Qwen3-8B"]}).json()["error"]
    assert en["code"] == zh["code"] == "bad-input" and en["field"] == zh["field"] == "model"
    assert en["message"] == "model: must be a string"
    assert HAN.search(zh["message"]) and HAN.search(zh["fix"]) and english_sentences(zh["message"] + "\n" + zh["fix"]) == []
    union = client.post("/api/memory?lang=zh", json={"model": "Qwen3-8B", "seq_len": {"a": 1}}).json()["error"]
    assert union["field"] == "seq_len" and HAN.search(union["message"]) and "JSON object" in union["message"]
    wrong_host = client.get("/api/labels?lang=zh", headers={"Host": "evil.example"})
    assert wrong_host.status_code == 421 and HAN.search(wrong_host.json()["error"]["message"])
    assert wrong_host.json()["error"]["code"] == "refused"
    cross = client.post("/api/memory?lang=zh", json={"model": "Qwen3-8B"}, headers={"Origin": "http://evil.example"})
    assert cross.status_code == 403 and HAN.search(cross.json()["error"]["message"])


def test_the_request_language_does_not_leak(client):
    """A request in Chinese leaves the next one (and the process) in the server's language."""
    assert HAN.search(client.post("/api/memory?lang=zh", json={"model": 1}).json()["error"]["message"])
    assert not HAN.search(client.post("/api/memory", json={"model": 1}).json()["error"]["message"])
    assert i18n.current() == "en"


def test_page_uses_only_catalog_labels():
    """app.js has no label table of its own: every t("key") and data-i18n key of the page is a key of LABELS."""
    js = (STATIC / "app.js").read_text(encoding="utf-8")
    html = (STATIC / "index.html").read_text(encoding="utf-8")
    assert not re.search(r"\bzh\s*:\s*\{", js), "app.js must not carry its own Chinese table"
    used = set(re.findall(r'\bt\("([a-z_0-9]+)"\s*[,)]', js)) | set(re.findall(r'data-i18n="([a-z_0-9]+)"', html))
    # keys built from values: t("verdict_" + v), t("sev_" + severity), t("phase_" + phase), t({...}[basis])
    used |= {"verdict_" + v for v in ("fits", "tight", "oom", "unknown", "none", "host_oom")}
    used |= {"sev_" + s for s in ("error", "warning", "info")} | {"by_cost", "by_gpu_hours", "by_time"}
    # column lists: const head = ["rank", ...]; ["instance", "reason", "fix"].map((h) => ... t(h) ...)
    lists = r'\[((?:\s*"[a-z_]+",)+\s*"[a-z_]+")\s*\]'
    for cols in re.findall(r"const head = " + lists, js) + re.findall(lists + r"\s*\.map\(\(h\)", js):
        used |= set(re.findall(r'"([a-z_]+)"', cols))
    missing = sorted(k for k in used if k not in LABELS)
    assert missing == [], f"app.js / index.html use labels that web/labels.py does not define: {missing}"


def test_terms_in_both_languages_from_their_descriptors(client):
    """The memory terms' labels, units and colours come from estimate/terms.py (GET /api/terms); app.js names no
    term and no colour of its own."""
    from trainfit.estimate.terms import TERMS

    en = client.get("/api/terms?lang=en").json()
    zh = client.get("/api/terms?lang=zh").json()
    assert [x["key"] for x in en] == [x["key"] for x in zh] == [t.key for t in TERMS]
    for term, e, z in zip(TERMS, en, zh):
        assert e == {"key": term.key, "label": term.short_label, "unit": term.unit, "colour": term.colour}
        assert z == dict(e, label=i18n.gettext_in("zh", term.short_label)) and HAN.search(z["label"]), z
    js = (STATIC / "app.js").read_text(encoding="utf-8")
    assert not [t.key for t in TERMS if f'"{t.key}"' in js or f"{t.key}:" in js]
    assert not [t.colour for t in TERMS if t.colour in js]


def test_check_severities_and_phases_have_labels():
    from trainfit.estimate.memory import PHASES
    from trainfit.rl.memory import RL_PHASES
    from trainfit.rules.types import SEVERITIES

    for p in PHASES + RL_PHASES:
        assert f"phase_{p}" in LABELS, p
    for s in SEVERITIES:
        assert f"sev_{s}" in LABELS, s


def test_concurrent_requests_in_two_languages_do_not_mix():
    """Many requests at once, alternating en and zh, through the ASGI app (sync handlers run in the thread pool):
    each answer is in its own request's language."""
    import asyncio

    import httpx

    app = create_app()

    async def one(i: int) -> tuple[str, str]:
        lang = "zh" if i % 2 else "en"
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c:
            labels = (await c.get(f"/api/labels?lang={lang}")).json()
            err = (await c.post(f"/api/memory?lang={lang}", json={"model": i})).json()["error"]
        return lang, labels["btn_plan"] + " " + err["message"]

    async def many():
        return await asyncio.gather(*(one(i) for i in range(24)))

    for lang, text in asyncio.run(many()):
        assert bool(HAN.search(text)) == (lang == "zh"), (lang, text)
