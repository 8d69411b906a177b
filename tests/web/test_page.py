"""The page in a real browser: headless Chromium (Debian's ``chromium``) driven by Playwright, against a local
uvicorn on 127.0.0.1. Fills the form, reads the result, takes the README's screenshots (docs/img/), checks that
the page asks nothing of any other origin and that a plan appears in under a second."""

from __future__ import annotations

import io
import os
import re
import shutil
import socket
import threading
import time
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
uvicorn = pytest.importorskip("uvicorn")
sync_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = os.environ.get("TRAINFIT_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
if not CHROMIUM:
    pytest.skip("no chromium on PATH (apt-get install -y chromium)", allow_module_level=True)

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
SHOTS = Path(os.environ.get("TRAINFIT_SCREENSHOT_DIR") or ROOT / "docs" / "img")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    from trainfit.web.app import create_app

    port = _free_port()
    srv = uvicorn.Server(uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="warning"))
    th = threading.Thread(target=srv.run, daemon=True)
    th.start()
    deadline = time.monotonic() + 20
    while not srv.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    srv.should_exit = True
    th.join(timeout=10)


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


@pytest.fixture()
def page(browser, server):
    ctx = browser.new_context(viewport={"width": 1400, "height": 900}, accept_downloads=True, locale="en-US")
    pg = ctx.new_page()
    pg.requests = []  # type: ignore[attr-defined]
    pg.errors = []  # type: ignore[attr-defined]
    pg.on("request", lambda r: pg.requests.append(r.url))
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    # anything not of this origin is refused (and recorded above): the page must work offline
    pg.route("**/*", lambda route: route.continue_() if route.request.url.startswith(server) else route.abort())
    yield pg
    assert not pg.errors, pg.errors
    ctx.close()


def _is_api(url: str, path: str) -> bool:
    """``url`` is a call of the API endpoint ``path`` (the page adds ``?lang=`` to every call)."""
    return url.split("?")[0].endswith(path)


def _api(server: str, path: str, body: dict) -> dict:
    import httpx

    return httpx.post(server + path, json=body, timeout=30).json()


def test_memory_view(page, server):
    page.goto(server + "/")
    page.wait_for_selector("body[data-loaded]")
    page.select_option("#model", "Qwen3-8B")
    page.select_option("#method", "lora")
    page.select_option("#gpu", "A10")
    page.fill("#seq_len", "2048")
    page.click("#run-memory")
    page.wait_for_selector("body[data-ready=memory]")
    expected = _api(server, "/api/memory", {"model": "Qwen3-8B", "method": "lora", "gpu": "A10", "seq_len": "2048"})
    assert page.get_attribute("#verdict", "data-verdict") == expected["verdict"]
    assert page.inner_text("#max-micro-batch") == str(expected["max_micro_batch"])
    terms = page.eval_on_selector_all("#bar .seg", "els => els.map(e => e.dataset.term)")
    assert terms == [k for k, v in expected["breakdown_gib"].items() if v > 0]
    assert page.locator("#bar .cap").count() == 1
    # a second setting joins the comparison
    page.fill("#seq_len", "1024")
    page.click("#run-memory")
    page.wait_for_selector("#history .hrow:nth-child(2)")  # (no wait_for_function: the CSP forbids eval)
    assert page.locator("#history .hrow").count() == 2
    with page.expect_download() as dl:  # the job files of this setting on this GPU
        page.click("#download-memory")
    assert "README.md" in [Path(n).name for n in zipfile.ZipFile(io.BytesIO(Path(dl.value.path()).read_bytes())).namelist()]


def test_readme_plan_appears_under_a_second(page, server):
    """The README's example (`plan Qwen3-14B --method full --tokens 2B`) on screen in under 1 s from the page's
    request: the page, its script, the three form tables, the search and the drawing. The server is warmed first
    (a running service has its imports loaded); the best of three loads is asserted, so a neighbour's burst on a
    shared 2-core machine does not fail it, and all three are printed."""
    _api(server, "/api/plan", {"model": "Qwen3-14B", "method": "full", "tokens": "2B"})  # warm the server
    times = []
    for _ in range(3):
        page.goto(server + "/?model=Qwen3-14B&method=full&tokens=2B&run=plan")
        page.wait_for_selector("body[data-ready=plan]")
        times.append(int(page.get_attribute("body", "data-ready-at")))
        assert page.locator("#plans tbody tr.plan").count() > 0
    print(f"README plan on screen {times} ms after the page was requested")
    assert min(times) < 1000, f"the plan appeared {times} ms after the page was requested"


def test_plan_view(page, server):
    body = {"model": "Qwen3-8B", "method": "lora", "tokens": "2B"}
    expected = _api(server, "/api/plan", body)
    page.goto(server + "/?model=Qwen3-8B&method=lora&tokens=2B&run=plan")
    page.wait_for_selector("body[data-ready=plan]")
    rows = page.locator("#plans tbody tr.plan")
    assert rows.count() == len(expected["plans"])
    assert page.locator("#rejected tbody tr").count() == len(expected["rejected"])
    assert str(len(expected["rejected"])) in page.inner_text("#rejected-box summary")
    first = rows.nth(0).locator("td").nth(1).inner_text()
    assert first == (expected["plans"][0]["instance_type"] or "–")
    # the page states the basis the server ranked by: never "cost" unless every plan has a price in one currency
    rk = expected["ranking"]
    summary = page.inner_text("#plan-summary")
    assert summary.endswith({"cost": "ranked by cost.", "gpu_hours": "ranked by GPU-hours.",
                             "hours": "ranked by time."}[rk["basis"]])
    assert rk["why_first"] in page.inner_text("#plan-ranking")
    metric = page.input_value("#y-metric")
    priced = [p["cost"] is not None for p in expected["plans"]]
    assert (rk["basis"] == "cost") == (all(priced) and len({p["currency"] for p in expected["plans"]}) == 1)
    assert metric == ("cost" if all(priced) else "gpu_hours")

    def has(p: dict) -> bool:
        return p["hours"] is not None and p[metric if metric == "gpu_hours" else "cost"] is not None

    npoints = page.evaluate("Chart.getChart('pareto').data.datasets.map(d => d.data.length)")
    assert npoints[0] == len([i for i in expected["pareto"] if has(expected["plans"][i])]) > 0
    assert npoints[1] == len([p for p in expected["plans"] if has(p)])
    if any(priced):  # the other measure: cost, for the plans that have a price
        page.select_option("#y-metric", "cost")
        npoints = page.evaluate("Chart.getChart('pareto').data.datasets.map(d => d.data.length)")
        assert npoints[1] == sum(1 for p in expected["plans"] if p["hours"] is not None and p["cost"] is not None)
        page.select_option("#y-metric", "gpu_hours")
    hours = expected["plans"][0]["intervals"]["hours"]  # the p10-p90 range next to the figure
    heads = [h.strip().lower() for h in page.locator("#plans thead th").all_inner_texts()]
    col = next(i for i, h in enumerate(heads) if h.startswith("hours"))
    assert f"{hours['p10']:,.1f}" in rows.nth(0).locator("td").nth(col).inner_text().replace("\n", " ")
    if len(expected["plans"]) > 12:
        assert not page.locator("#plans tbody tr.plan").nth(12).is_visible()
        page.click("#show-all")
        assert page.locator("#plans tbody tr.plan").nth(len(expected["plans"]) - 1).is_visible()


def test_download_zip(page, server):
    expected = _api(server, "/api/plan", {"model": "Qwen3-8B", "method": "lora", "tokens": "2B"})
    page.goto(server + "/?model=Qwen3-8B&method=lora&tokens=2B&run=plan")
    page.wait_for_selector("body[data-ready=plan]")
    regions = (expected["plans"][0].get("instance") or {}).get("regions") or []
    if regions:
        page.fill("#job-region", regions[0])
    with page.expect_download() as dl:
        page.locator("#plans tbody tr.plan").nth(0).locator("button").click()
    data = Path(dl.value.path()).read_bytes()
    names = [Path(n).name for n in zipfile.ZipFile(io.BytesIO(data)).namelist()]
    assert "README.md" in names and len(names) > 1


def test_bad_input_shows_the_cli_message_and_marks_the_field(page, server):
    page.goto(server + "/")
    page.wait_for_selector("body[data-loaded]")
    page.fill("#seq_len", "4x")
    page.click("#run-memory")
    page.wait_for_selector("body[data-ready=error]")
    expected = _api(server, "/api/memory", {"model": "Qwen3-8B", "seq_len": "4x"})["error"]
    text = page.inner_text("#error")
    assert expected["message"] in text and expected["fix"] in text
    assert "invalid" in page.get_attribute("#seq_len", "class")


def _switch(page, lang: str) -> None:
    """Click the language switch and wait until the labels and what is on screen (asked again) are in ``lang``."""
    page.click(f"#lang-{lang}")
    page.wait_for_selector(f"body[data-shown-lang={lang}]")


def test_chinese_switch(page, server):
    page.goto(server + "/?model=Qwen3-8B&method=lora&gpu=A10&run=memory")
    page.wait_for_selector("body[data-ready=memory]")
    assert page.inner_text("#run-plan") == "Plan"
    asked = []
    page.on("request", lambda r: asked.append(r.url))
    _switch(page, "zh")
    assert page.inner_text("#run-plan") == "规划"
    assert page.get_attribute("html", "lang") == "zh-CN"
    assert page.inner_text("#verdict") in ("装得下", "偏紧", "显存不足", "未知")
    # the labels come from the server's catalog, and what is on screen is asked again in Chinese
    assert any(_is_api(u, "/api/labels") and "lang=zh" in u for u in asked)
    assert any(_is_api(u, "/api/memory") and "lang=zh" in u for u in asked)
    _switch(page, "en")
    assert page.inner_text("#run-plan") == "Plan"


#: The cases the 中文 page is read in: the README's memory and plan examples, an OOM and a plan with rejections
#: (and the fixes to apply), each as the page's address (the form filled from it) and the ready state it ends in.
ZH_CASES = {
    "readme-memory": ("model=Qwen3-8B&method=lora&gpu=A10&run=memory", "memory"),
    "oom": ("model=Qwen3-14B&method=full&gpu=A10&run=memory", "memory"),
    "readme-plan": ("model=Qwen3-14B&method=full&tokens=2B&run=plan", "plan"),
    "rejected": ("model=Qwen3-8B&method=lora&tokens=200M&provider=alibaba&resource_class=pai-public&spot=1&run=plan",
                 "plan"),
}


def _zh_page(page, server, case: str) -> None:
    """The page of ``case`` in English, switched to 中文 (what a user does), every collapsed part opened."""
    query, ready = ZH_CASES[case]
    page.goto(server + "/?" + query)
    page.wait_for_selector(f"body[data-ready={ready}]")
    _switch(page, "zh")
    page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")


def _own_label_text(page) -> str:
    """The page's own words (labels, headings, column names, the verdict, the plan summary), not the server's."""
    return "\n".join(page.eval_on_selector_all(
        "[data-i18n], option[data-i18n-opt], thead th, #verdict, #plan-summary, #mem-facts dt, main button",
        "els => els.map(e => e.textContent)"))


@pytest.mark.parametrize("case", sorted(ZH_CASES))
def test_chinese_page_labels_have_no_english(page, server, case):
    """Strict: every word the page itself writes is Chinese once switched (names, units and flags aside)."""
    from tests._lang import english_sentences

    _zh_page(page, server, case)
    text = _own_label_text(page)
    assert re.search(r"[\u4e00-\u9fff]", text)
    assert english_sentences(text) == []


@pytest.mark.parametrize("case", sorted(ZH_CASES))
def test_chinese_page_has_no_english_sentence_from_the_server(page, server, case):
    """Issue 28: in 中文 the server's reasons, fixes, warnings, rejections and notes are Chinese too (the DOM text
    the user reads, as in the zh screenshots)."""
    from tests._lang import english_sentences

    _zh_page(page, server, case)
    left = english_sentences(page.inner_text("main"))
    assert left == [], sorted(set(left))


def test_chinese_error_from_the_server(page, server):
    """A refused field in 中文: the message and the fix the server sends come back in Chinese (the web layer's own
    messages are translated on this branch: a JSON type error is one)."""
    page.goto(server + "/?lang=zh")
    page.wait_for_selector("body[data-shown-lang=zh]")
    page.fill("#seq_len", "4x")
    page.click("#run-memory")
    page.wait_for_selector("body[data-ready=error]")
    err = _api(server, "/api/memory?lang=zh", {"model": "Qwen3-8B", "seq_len": "4x"})["error"]
    text = page.inner_text("#error")
    assert err["message"] in text and err["code"] == "bad-input"
    assert text.startswith(err["message"]) and "修复方法" in text  # the page's own "fix" label is Chinese
    _switch(page, "en")  # the error on screen is asked again in English
    assert _api(server, "/api/memory?lang=en", {"model": "Qwen3-8B", "seq_len": "4x"})["error"]["message"] \
        in page.inner_text("#error")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_readme_screenshots(page, server, lang):
    """The README's screenshots in both languages: docs/img/web-memory-{en,zh}.png and web-plan-{en,zh}.png
    (the Chinese ones need a CJK font: .ci/run installs fonts-noto-cjk). One command regenerates all four:
    ``python -m pytest tests/web/test_page.py -k screenshots``."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.goto(server + f"/?lang={lang}&model=Qwen3-8B&method=lora&gpu=A10&run=memory")
    page.wait_for_selector("body[data-ready=memory]")
    page.fill("#seq_len", "1024")
    page.click("#run-memory")
    page.wait_for_selector("#history .hrow:nth-child(2)")
    assert page.get_attribute("html", "lang") == ("zh-CN" if lang == "zh" else "en")
    page.screenshot(path=str(SHOTS / f"web-memory-{lang}.png"), full_page=True)
    page.goto(server + f"/?lang={lang}&model=Qwen3-8B&method=lora&tokens=2B&run=plan")
    page.wait_for_selector("body[data-ready=plan]")
    box = page.locator("#plan-view").bounding_box()
    page.screenshot(path=str(SHOTS / f"web-plan-{lang}.png"), full_page=True,
                    clip={"x": box["x"], "y": box["y"], "width": box["width"], "height": min(box["height"], 1150)})


def test_no_request_leaves_the_origin(page, server):
    page.goto(server + "/?model=Qwen3-8B&method=lora&tokens=2B&run=plan")
    page.wait_for_selector("body[data-ready=plan]")
    page.click("#run-memory")
    page.wait_for_selector("body[data-ready=memory]")
    page.click("#lang-zh")
    page.goto(server + "/docs")  # the API docs too (FastAPI's default would load Swagger UI from a CDN)
    page.wait_for_selector(".opblock", timeout=15000)
    page.goto(server + "/")
    page.wait_for_selector("body[data-loaded]")
    own = [u for u in page.requests if u.startswith(server + "/") or u.startswith(("data:", "blob:"))]
    outside = [u for u in page.requests if u not in own]
    assert len(page.requests) > 5
    assert outside == [], outside


def test_check_upload(page, server):
    page.goto(server + "/")
    page.wait_for_selector("body[data-loaded]")
    page.set_input_files("#check-file", str(ROOT / "tests" / "fixtures" / "check" / "dlc_public_cap.json"))
    page.click("#check-form button")
    page.wait_for_selector("#check-result li")
    text = page.inner_text("#check-result")
    assert "dlc_public_cap.json" in text and "error" in text


def test_check_result_shows_the_memory_range(page, server, tmp_path):
    """Issue 26: the page showed check's findings but not its notes, so the memory check's figure and its p10-p90
    range (and P(OOM)) never reached the page."""
    from trainfit.cli import main

    main(["render", "Qwen3-8B", "--method", "lora", "--tokens", "100M", "--gpus", "8", "--instance-type",
          "generic-8xH100", "--target", "swift", "--out", str(tmp_path)])
    page.goto(server + "/")
    page.wait_for_selector("body[data-loaded]")
    page.set_input_files("#check-file", str(tmp_path / "swift_sft.sh"))
    page.click("#check-form button")
    page.wait_for_selector("#check-notes li")
    note = page.inner_text("#check-notes")
    assert re.search(r"p10-p90 [\d.,]+-[\d.,]+", note) and "P(OOM)" in note, note


def test_memory_view_shows_why_and_what_the_gpu_cannot_run(page, server):
    """The CLI prints the verdict's reasons and the kernel gate (FlashAttention-3 off Hopper); the page showed
    neither, so 'fits' on an A100 with flash3 looked runnable."""
    page.goto(server + "/")
    page.wait_for_selector("body[data-loaded]")
    page.select_option("#model", "Qwen3-8B")
    page.select_option("#method", "lora")
    page.select_option("#gpu", "A100-80GB-SXM")
    page.click("#more summary")
    page.select_option("#f-attention", "flash3")
    page.click("#run-memory")
    page.wait_for_selector("body[data-ready=memory]")
    assert "FlashAttention-3" in page.inner_text("#mem-warnings")
    page.select_option("#gpu", "A10")
    page.select_option("#f-attention", "sdpa")
    page.click("#run-memory")
    page.wait_for_selector("#history .hrow:nth-child(2)")
    assert "safety margin" in page.inner_text("#mem-warnings")  # tight: the reason the CLI prints


def _cells(page, i: int) -> dict:
    return dict(zip(page.eval_on_selector_all("#plans thead th", "els => els.map(e => e.dataset.col)"),
                    page.locator("#plans tbody tr.plan").nth(i).locator("td").all_inner_texts()))


def _num(text: str) -> float:
    return float(text.split("\n")[0].split("/")[0].replace(",", "").replace("%", "").split()[0])


def test_plan_table_has_the_cli_columns_and_warnings(page, server):
    """tok/s, MFU, precision mode, price and every row's warnings, as `plan` prints them (issue 28: the page
    dropped them, so fp16 on V100 or multi-node without RDMA went unseen)."""
    body = {"model": "Qwen3-8B", "method": "lora", "tokens": "2B", "allow_fp16": True}
    expected = _api(server, "/api/plan", body)
    page.goto(server + "/?model=Qwen3-8B&method=lora&tokens=2B&allow_fp16=true&run=plan")
    page.wait_for_selector("body[data-ready=plan]")
    page.click("#show-all") if page.locator("#show-all").is_visible() else None
    cols = page.eval_on_selector_all("#plans thead th", "els => els.map(e => e.dataset.col)")
    for c in ("gpu_col", "precision", "tok_s", "mfu", "hours", "gpu_hours", "cost", "price"):
        assert c in cols
    plans = expected["plans"]
    assert page.locator("#plans tbody tr.plan").count() == len(plans)
    for i, p in enumerate(plans):
        row = _cells(page, i)
        assert row["precision"] == p["settings"].get("precision_mode", p["settings"]["precision"])
        assert abs(_num(row["tok_s"]) - p["tokens_per_s"]) <= 0.5 + 1e-6 * p["tokens_per_s"]
        if p["mfu"] is not None:
            assert abs(_num(row["mfu"]) - 100 * p["mfu"]) <= 0.5
        iv = p.get("intervals") or {}
        if iv.get("hours"):  # the p10-p90 range under the figure
            assert "(" in row["hours"] and "–" in row["hours"]
        if p["price_per_hour"] is None:
            assert row["price"] == "–"
        warn = page.locator(f"#plans tbody tr[data-warn='{i}']")
        if p["warnings"]:
            text = warn.inner_text()
            assert all(w in text for w in p["warnings"]), (i, p["warnings"])
        else:
            assert warn.count() == 0 or "warning:" not in warn.inner_text()
    fp16 = [i for i, p in enumerate(plans) if "fp16" in str(p["settings"].get("precision_mode", "")) or
            p["settings"]["precision"] == "fp16"]
    assert fp16, "allow_fp16 should plan an fp16 GPU"
    assert "no bf16" in page.locator(f"#plans tbody tr[data-warn='{fp16[0]}']").inner_text()
    rk = expected["ranking"]
    assert rk["summary"] in page.inner_text("#plan-ranking")
    if rk["basis"] != "cost":
        assert "ranked by cost" not in page.inner_text("#plan-view")


def test_spot_region_lingjun_and_rl_inputs_send_what_plan_takes(page, server):
    """The inputs the rejection fixes point to (spot, region, resource class, GPU memory) and RL sizing: what the
    page sends is what the API plans, and the table is that plan's."""
    page.goto(server + "/")
    page.wait_for_selector("body[data-loaded]")
    sent = []
    page.on("request", lambda r: sent.append(r.post_data_json) if _is_api(r.url, "/api/plan") else None)
    page.select_option("#model", "Qwen3-8B")
    page.select_option("#method", "lora")
    page.select_option("#provider", "alibaba")
    page.select_option("#resource_class", "pai-lingjun")
    page.fill("#region", "cn-wulanchabu")
    page.fill("#gpu_mem", "80")
    page.check("#spot")
    page.check("#compare_regions")
    page.click("#rl-box summary")
    page.select_option("#rl", "grpo")
    page.select_option("#rollout_engine", "vllm")
    page.fill("#rollout_tp", "2")
    page.fill("#prompt_len", "512")
    page.fill("#response_len", "1024")
    page.fill("#num_generations", "8")
    page.fill("#steps", "100")
    page.click("#run-plan")
    page.wait_for_selector("body[data-ready=plan], body[data-ready=error]")
    body = sent[-1]
    assert body["spot"] is True and body["compare_regions"] is True and body["region"] == "cn-wulanchabu"
    assert body["resource_class"] == "pai-lingjun" and body["gpu_mem"] == "80"
    assert {body[k] for k in ("rl", "rollout_engine", "rollout_tp", "prompt_len", "response_len",
                              "num_generations", "steps")} == {"grpo", "vllm", "2", "512", "1024", "8", "100"}
    assert "seq_len" not in body and "tokens" not in body  # RL: the sequence and the budget come from its fields
    expected = _api(server, "/api/plan", body)
    if "error" in expected:
        assert expected["error"]["message"] in page.inner_text("#error")
        return
    assert page.get_attribute("body", "data-ready") == "plan"
    assert page.locator("#plans tbody tr.plan").count() == len(expected["plans"])
    for i, p in enumerate(expected["plans"][:5]):
        assert p["resource_class"] == "pai-lingjun" and p["spot"] is True and p["gpu_mem_gib"] >= 80
        row = _cells(page, i)
        assert row["instance"] == p["instance_type"]
        assert f"-bound" in row["strategy"] and p["rl"]["binding_phase"] in row["strategy"]
    assert page.locator("#rejected tbody tr").count() == len(expected["rejected"])
    assert page.locator("#region-box").is_visible() == bool(expected.get("region_prices"))


def test_rl_plan_with_defaults(page, server):
    """An RL plan from the page with only the algorithm and steps set: rows carry the RL settings column."""
    page.goto(server + "/?model=Qwen3-0.6B&method=lora&rl=grpo&steps=50&run=plan")
    page.wait_for_selector("body[data-ready=plan]")
    expected = _api(server, "/api/plan", {"model": "Qwen3-0.6B", "method": "lora", "rl": "grpo", "steps": "50"})
    assert page.locator("#plans tbody tr.plan").count() == len(expected["plans"]) > 0
    assert expected["plans"][0]["rl"]["binding_phase"] in _cells(page, 0)["strategy"]


def test_memory_panel_follows_the_form(page, server):
    """Issue 28: after the method changed the panel still showed the LoRA breakdown under 'full'."""
    page.goto(server + "/?model=Qwen3-8B&method=lora&gpu=A100-80GB-SXM&run=memory")
    page.wait_for_selector("body[data-ready=memory]")
    lora = page.inner_text("#mem-summary")
    assert "lora" in lora
    page.select_option("#method", "full")  # no click: the panel re-runs
    page.wait_for_selector("#mem-summary:has-text('full')")
    page.wait_for_selector("#memory-view:not(.stale)")
    expected = _api(server, "/api/memory", {"model": "Qwen3-8B", "method": "full", "gpu": "A100-80GB-SXM",
                                            "seq_len": "2048"})
    assert page.get_attribute("#verdict", "data-verdict") == expected["verdict"]
    terms = page.eval_on_selector_all("#bar .seg", "els => els.map(e => e.dataset.term)")
    assert terms == [k for k, v in expected["breakdown_gib"].items() if v > 0]
    legend = page.inner_text("#legend")
    assert f"{expected['breakdown_gib']['optimizer']:.2f}" in legend.replace(",", "")
    # a plan on screen is marked out of date when the form changes
    page.click("#run-plan")
    page.wait_for_selector("body[data-ready=plan]")
    assert not page.locator("#plan-stale").is_visible()
    page.fill("#tokens", "1B")
    page.locator("#tokens").dispatch_event("change")
    assert page.locator("#plan-stale").is_visible()


def test_rl_memory(page, server):
    page.goto(server + "/?model=Qwen3-8B&method=lora&gpu=A100-80GB-SXM&rl=grpo&prompt_len=512&response_len=1024"
              "&run=memory")
    page.wait_for_selector("body[data-ready=memory]")
    expected = _api(server, "/api/memory", {"model": "Qwen3-8B", "method": "lora", "gpu": "A100-80GB-SXM",
                                            "rl": "grpo", "prompt_len": "512", "response_len": "1024"})
    assert page.get_attribute("#verdict", "data-verdict") == expected["rl"]["verdict"]
    assert expected["rl"]["binding_phase"] in page.inner_text("#rl-phases")


def test_price_with_source_and_age_and_the_per_region_view(page, server, tmp_path):
    """A priced plan shows its price per hour, its date and age and a link to its source, as the CLI's '#N price:'
    line; 'Prices in every region' shows the same plans priced per region (plan --compare-regions)."""
    from trainfit.catalog import _store
    from trainfit.catalog import set_overlay_path

    overlay = tmp_path / "catalog.yaml"
    rows = "".join(
        f"  - {{provider: generic, resource_class: generic, instance_type: generic-8xH100, region: {r}, "
        f"billing: payg, verified: yes, price_per_hour: {p}, currency: USD, source: 'https://example.com/prices', "
        f"as_of: '2026-11-20'}}\n" for r, p in (("us-east-1", 20.0), ("eu-west-1", 24.0)))
    overlay.write_text("prices:\n" + rows, encoding="utf-8")
    set_overlay_path(str(overlay))  # the server runs in this process
    _store.reset_cache()
    body = {"model": "Qwen3-8B", "method": "lora", "tokens": "2B", "gpu": "H100-SXM", "compare_regions": True}
    expected = _api(server, "/api/plan", body)
    page.goto(server + "/?model=Qwen3-8B&method=lora&tokens=2B&plan_gpu=H100-SXM&compare_regions=1&run=plan")
    page.wait_for_selector("body[data-ready=plan]")
    priced = [i for i, p in enumerate(expected["plans"]) if p["price_per_hour"] is not None]
    assert priced
    for i, p in enumerate(expected["plans"]):
        cell = page.locator("#plans tbody tr.plan").nth(i).locator("td[data-col=price]")
        if i in priced:
            text = cell.inner_text()
            assert f"{p['price_per_hour']:.2f} {p['currency']}" in text and "2026-11-20" in text and "days old" in text
            assert cell.locator("a").get_attribute("href") == p["price_source"]
        else:
            assert cell.inner_text() == "–"
    assert page.locator("#region-box").is_visible()
    text = page.inner_text("#region-prices")
    for g in expected["region_prices"][0]["regions"]:
        assert g["region"] in text and f"{g['price_per_hour']:.2f}" in text
    # issue 26: each region's cost with its p10-p90 range, as in the plan table
    assert re.search(r"\([\d.,]+–[\d.,]+\)", text), text
    # never "ranked by cost" unless every plan has a price
    if len(priced) < len(expected["plans"]):
        assert "ranked by cost" not in page.inner_text("#plan-summary")


def test_a_rejection_fix_applies_and_replans(page, server):
    """Rejection fixes pointed to CLI flags the page had no input for: each fix the planner checked
    (fix_options) is a button that applies it and plans again."""
    body = {"model": "Qwen3-14B", "method": "full", "tokens": "2B", "gpu": "A10"}
    expected = _api(server, "/api/plan", body)
    page.goto(server + "/?model=Qwen3-14B&method=full&tokens=2B&plan_gpu=A10&run=plan")
    page.wait_for_selector("body[data-ready=plan]")
    k = next(i for i, r in enumerate(expected["rejected"]) if any("ignore_rule" in o for o in r["fix_options"]))
    opt = next(o for o in expected["rejected"][k]["fix_options"] if "ignore_rule" in o)
    sent = []
    page.on("request", lambda r: sent.append(r.post_data_json) if _is_api(r.url, "/api/plan") else None)
    page.click("#rejected-box summary")
    page.locator("#rejected tbody tr").nth(k).locator("button.apply").first.click()
    page.wait_for_selector("#plan-extra:not([hidden])")
    page.wait_for_selector("body[data-ready=plan]")
    assert sent and set(opt["ignore_rule"]) <= set(sent[-1]["ignore_rule"])
    assert opt["ignore_rule"][0] in page.inner_text("#plan-extra")
    again = _api(server, "/api/plan", sent[-1])
    assert page.locator("#plans tbody tr.plan").count() == len(again["plans"])


def test_memory_panel_shows_the_reserved_range_and_p_oom(page, server):
    """Issue 26: every memory figure shows its p10-p90 range, and the verdict its calibrated P(OOM), on the page as
    in the CLI (the panel showed neither)."""
    page.goto(server + "/?model=Qwen3-8B&method=full&gpu=A100-80GB-SXM&run=memory")
    page.wait_for_selector("body[data-ready=memory]")
    expected = _api(server, "/api/memory", {"model": "Qwen3-8B", "method": "full", "gpu": "A100-80GB-SXM"})
    rng = expected["reserved_interval_gib"]
    assert rng["p10"] < expected["reserved_gib"] < rng["p90"]
    summary = page.inner_text("#mem-summary").replace(",", "")
    assert f"({rng['p10']:.1f}–{rng['p90']:.1f})" in summary
    p = expected["fit"]["oom_probability"]
    shown = "<1%" if p < 0.01 else (">99%" if p > 0.99 else f"{round(100 * p)}%")
    assert f"P(OOM) {shown}" in page.inner_text("#mem-p-oom")
    # the history row carries the range too
    assert f"({rng['p10']:.1f}–{rng['p90']:.1f})" in page.inner_text("#history").replace(",", "")


def test_a_risky_fit_says_why_its_suggestions_are_there(page, server):
    """A job that fits by the margin but at a P(OOM) at or above the planner's limit gets suggestions (estimate.fit
    OOM_RISK_LIMIT); the page says why, as `memory` does in the terminal (the README screenshot's case)."""
    sent = []
    page.on("request", lambda r: sent.append(r.post_data_json) if _is_api(r.url, "/api/memory") else None)
    page.goto(server + "/?model=Qwen3-8B&method=lora&gpu=A10&run=memory")
    page.wait_for_selector("body[data-ready=memory]")
    page.fill("#seq_len", "1024")
    page.click("#run-memory")
    page.wait_for_selector("#history .hrow:nth-child(2)")
    expected = _api(server, "/api/memory", sent[-1])
    assert expected["verdict"] == "fits" and expected["suggestions"]
    assert expected["fit"]["oom_probability"] >= expected["oom_risk_limit"]
    shown = page.inner_text("#suggestions")
    assert "a plan may carry" in shown and expected["suggestions"][0]["change"] in shown
