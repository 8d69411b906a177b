"""`trainfit check --lang zh`: findings, fixes and notes in Chinese, rule ids (the stable codes) and severities in
English, on rendered jobs (DLC JSON, launch.sh on PAI public resources, a DeepSpeed config with schema errors, a
data rule); cached rule and catalog loading does not freeze a language."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest

from tests._lang import english_sentences
from trainfit import i18n
from trainfit.check import check_file
from trainfit.cli import main

FX = Path(__file__).parent.parent / "fixtures" / "check"
CJK = re.compile(r"[\u4e00-\u9fff]")
RULE_ID = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
QUOTED = re.compile(r'"[^"]*"')
#: Findings whose message quotes the fit decision's reasons, which the estimate package words (its own catalog):
#: their message is checked for the part check writes, their fix in full.
QUOTES_OTHER_AREAS = {"memory-fit", "kernel-support"}


def _check_json(capsys, *args) -> dict:
    rc = main(["check", *map(str, args), "--json", "--lang", "zh"])
    out = capsys.readouterr()
    assert rc in (0, 1), out.err
    return json.loads(out.out)


def _assert_chinese(res: dict, *, want_rules: set[str] = frozenset()) -> None:
    rules = {v["rule"] for v in res["violations"]}
    assert want_rules <= rules, res["violations"]
    for v in res["violations"]:
        assert RULE_ID.fullmatch(v["rule"]), v  # the code stays English
        assert v["severity"] in ("error", "warning", "info"), v
        assert CJK.search(v["fix"]) or not re.search(r"[a-z]{3,} [a-z]{3,} [a-z]{3,}", v["fix"]), v
        assert not english_sentences(v["fix"]), v
        assert CJK.search(v["message"]), v
        if v["rule"] not in QUOTES_OTHER_AREAS:
            assert not english_sentences(v["message"]), v
    for note in res["notes"]:
        assert CJK.search(note) and not english_sentences(note), note


def test_rendered_dlc_json_in_chinese(rendered, capsys):
    d, _res = rendered["lora1"]
    res = _check_json(capsys, d / "dlc_job.json")
    assert res["kind"] == "dlc-json"
    _assert_chinese(res)
    assert any("显存" in n for n in res["notes"]), res["notes"]


def test_public_resource_cap_in_chinese_with_english_codes(capsys):
    res = _check_json(capsys, FX / "dlc_public_cap.json")
    _assert_chinese(res, want_rules={"pai-public-quota", "pai-public-vcpu-quota"})
    quota = next(v for v in res["violations"] if v["rule"] == "pai-public-quota")
    assert "公共资源组" in quota["message"] and "--ignore-rule pai-public-quota" in quota["fix"]
    # the same file in English: the same codes and severities, English text
    assert main(["check", str(FX / "dlc_public_cap.json"), "--json", "--lang", "en"]) in (0, 1)
    en = json.loads(capsys.readouterr().out)
    assert [(v["rule"], v["severity"]) for v in en["violations"]] == \
           [(v["rule"], v["severity"]) for v in res["violations"]]
    quota_en = next(v for v in en["violations"] if v["rule"] == "pai-public-quota")
    assert "public resources are capped" in quota_en["message"] and not CJK.search(quota_en["fix"])


def test_rendered_launch_sh_on_pai_public_in_chinese(rendered, capsys):
    d, _res = rendered["lora1"]
    res = _check_json(capsys, d / "launch.sh", "--instance-type", "ecs.gn6i-c24g1.12xlarge")
    _assert_chinese(res, want_rules={"pai-public-vcpu-quota"})


def test_world_size_findings_in_chinese(capsys):
    res = _check_json(capsys, FX / "launch_world_size.sh")
    _assert_chinese(res, want_rules={"dlc-world-size-is-nodes", "dlc-node-rank-not-rank-env"})
    v = next(v for v in res["violations"] if v["rule"] == "dlc-world-size-is-nodes")
    assert "WORLD_SIZE" in v["message"] and "节点数" in v["message"]


def test_rendered_deepspeed_config_with_schema_errors_in_chinese(rendered, capsys, tmp_path):
    d, _res = rendered["zero3"]
    cfg = json.loads((d / "ds_config.json").read_text())
    cfg["zero_optimization"]["stage"] = 5
    cfg["zero_optimization"]["offload_optimizer"] = {"device": "disk"}
    cfg["gradient_accumulation_steps"] = 0
    bad = tmp_path / "ds_config.json"
    bad.write_text(json.dumps(cfg))
    res = _check_json(capsys, bad)
    _assert_chinese(res, want_rules={"deepspeed-config"})
    ds = [v for v in res["violations"] if v["rule"] == "deepspeed-config"]
    assert {v["severity"] for v in ds} == {"error"} and len(ds) == 3, ds
    assert any("zero_optimization.stage" in v["message"] and "5" in v["message"] for v in ds)
    assert any("'disk'" in v["message"] and "nvme" in v["message"] for v in ds)


def test_data_rule_in_chinese(rendered):
    from trainfit.dataset.stats import DatasetStats

    d, _res = rendered["lora1"]  # ms-swift, cut-off 2048, packing on, one epoch
    stats = DatasetStats(files=("train.jsonl",), tokenizer="tok", template="chatml", seq_len=2048, rows=1000,
                         samples=1000, skipped=0, sampled=False, tokens_total=3_000_000, loss_tokens_total=2_000_000,
                         tokens_after_cut=2_500_000, mean=3000.0, std=900.0,
                         percentiles={"p50": 2900, "p90": 4100, "p99": 5200}, max_len=6000, min_len=200,
                         loss_mean=2000.0, histogram=[(4096, 800), (8192, 200)], truncated_share=0.3,
                         packed_sequences=1300, packing_efficiency=0.95, padding_waste={"1": 0.0, "2": 0.2},
                         cutoffs=[])
    for lang, want in (("zh", "截断"), ("en", "truncates")):
        with i18n.language(lang):
            res = check_file(d / "swift_sft.sh", dataset=stats)
        data = [v for v in res.violations if v.rule == "data"]
        assert data and data[0].severity == "warning" and want in data[0].message, (lang, data)
        notes = [n for n in res.notes if "epoch" in n]
        assert notes, res.notes
        if lang == "zh":
            assert not english_sentences(data[0].message) and not english_sentences(data[0].fix)
            assert all(not english_sentences(n) for n in notes), notes
        else:
            assert not CJK.search(data[0].message + data[0].fix + " ".join(notes))


def test_bad_input_error_in_chinese(tmp_path, capsys):
    p = tmp_path / "job.json"
    p.write_text('{"foo": 1}')
    assert main(["check", str(p), "--lang", "zh"]) == 2
    err = capsys.readouterr().err
    assert "无法识别的 JSON" in err and "Traceback" not in err


def test_cached_rules_do_not_freeze_a_language():
    """load_rules() is an lru_cache: it holds the English ids, each finding is worded when it is built."""
    from trainfit.rules import evaluate_instance, load_rules

    load_rules.cache_clear()
    with i18n.language("en"):
        load_rules()  # filled in English
        en = evaluate_instance("ecs.gn6i-c24g1.12xlarge", nodes=2, resource_class="pai-public")
    with i18n.language("zh"):
        zh = evaluate_instance("ecs.gn6i-c24g1.12xlarge", nodes=2, resource_class="pai-public")
        shown = next(r for r in load_rules() if r.id == "pai-public-quota").shown()
    with i18n.language("en"):
        en2 = evaluate_instance("ecs.gn6i-c24g1.12xlarge", nodes=2, resource_class="pai-public")
    assert [v.rule for v in en] == [v.rule for v in zh] == [v.rule for v in en2] and en
    q_en, q_zh, q_en2 = (next(v for v in vs if v.rule == "pai-public-quota") for vs in (en, zh, en2))
    assert "capped at 2 GPUs" in q_en.message and q_en == q_en2
    assert "公共资源组" in q_zh.message and "公共资源组" in q_zh.why and CJK.search(q_zh.fix)
    assert shown.id == "pai-public-quota" and "公共资源组" in shown.title
    assert next(r for r in load_rules() if r.id == "pai-public-quota").title.startswith("PAI public resources")


def test_every_rule_text_has_its_chinese(monkeypatch):
    """Every title, why and fix of providers/*/rules.yaml reads as Chinese under zh (the rule ids do not change)."""
    from trainfit.rules import load_rules

    with i18n.language("zh"):
        for r in load_rules():
            s = r.shown()
            assert s.id == r.id
            for field in ("title", "why", "fix"):
                text = getattr(s, field)
                if text == getattr(r, field):  # a command line, the same in both languages
                    assert field == "fix" and text.startswith("torchrun "), (r.id, field, text)
                    continue
                # English document titles stay quoted as they are ("Use preemptible jobs")
                assert CJK.search(text) and not english_sentences(QUOTED.sub(" ", text)), (r.id, field, text)


def test_catalog_cache_does_not_freeze_a_language(monkeypatch, tmp_path):
    """The merged catalog is cached; its warnings are text, so the cache is keyed on the language."""
    from trainfit.catalog._store import current_catalog, reset_cache

    (tmp_path / "catalog").mkdir()
    (tmp_path / "catalog" / "pai-cn-hangzhou.json").write_text('{"format": "something else"}')
    monkeypatch.setenv("TRAINFIT_CACHE_DIR", str(tmp_path))
    reset_cache()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with i18n.language("en"):
                en = current_catalog().warnings
            with i18n.language("zh"):
                zh = current_catalog().warnings
            with i18n.language("en"):
                en2 = current_catalog().warnings
        assert en and en == en2 and en[0].startswith("ignoring refresh cache")
        assert zh and "忽略刷新缓存" in zh[0] and not english_sentences(zh[0].split("：", 1)[0])
    finally:
        monkeypatch.delenv("TRAINFIT_CACHE_DIR")
        reset_cache()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_unknown_gpu_and_instance_errors_follow_the_language(lang):
    from trainfit.catalog import get_gpu, get_instance
    from trainfit.errors import TrainfitError

    with i18n.language(lang):
        with pytest.raises(TrainfitError) as g:
            get_gpu("H1OO")
        with pytest.raises(TrainfitError) as inst:
            get_instance("ecs.gn7i-c8g1.2xlarg")
    for e in (g.value, inst.value):
        text = e.message + " " + (e.fix or "")
        assert bool(CJK.search(text)) == (lang == "zh"), text
        if lang == "zh":
            assert not english_sentences(text), text


def test_deepspeed_auto_values_named_in_chinese(tmp_path):
    cfg = tmp_path / "ds_config.json"
    cfg.write_text(json.dumps({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
                               "gradient_accumulation_steps": "auto", "zero_optimization": {"stage": 2}}))
    with i18n.language("zh"):
        res = check_file(cfg)
    v = next(v for v in res.violations if v.rule == "deepspeed-config")
    assert v.severity == "warning" and "train_batch_size" in v.message and "world size" in v.message
    assert CJK.search(v.message) and not english_sentences(v.message) and not english_sentences(v.fix)
