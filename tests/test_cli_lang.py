"""The CLI under ``--lang zh``: tables, notes, verdicts, errors and fixes in Chinese; ``--json`` keeps its English
keys and codes; argparse's own words follow the language; English stays the default.

Two kinds of checks:

* strict, for the CLI's own strings (``_cli/``, ``cli.py``, ``options.py``, ``inputs.py``): no English run of 3+
  words of any of their message ids (found with the shared checker, ``tests/_lang.py``) may appear in the Chinese
  output, and known Chinese labels must;
* the whole output free of English sentences (every area has its Chinese catalog).

"""

from __future__ import annotations

import argparse
import ast
import gettext
import json
import re
from functools import lru_cache
from pathlib import Path

import pytest

from _lang import english_sentences
from trainfit.cli import main
from trainfit.workload import Workload

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "trainfit"
CLI_SOURCES = sorted((SRC / "_cli").glob("*.py")) + [SRC / "cli.py", SRC / "options.py", SRC / "inputs.py"]
CJK = re.compile(r"[\u4e00-\u9fff]")

@lru_cache(maxsize=1)
def cli_english_runs() -> frozenset[str]:
    """The English runs of 3+ words in the message ids of the CLI's own sources (placeholders, flags, backticked
    commands and rich markup left out): none of them may be printed under --lang zh."""
    runs: set[str] = set()
    for path in CLI_SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("_", "N_", "ngettext")):
                continue
            for arg in node.args[:2 if node.func.id == "ngettext" else 1]:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    text = re.sub(r"\[/?[a-z]+\]|%\(\w+\)[sr]|%[sr]", " ", arg.value)  # markup, argparse fields
                    whole = text.strip(" .,;:!?()")
                    # a run of 4+ words, or a whole 3-word id ("no problems found"): shorter pieces of a longer id
                    # ("not in the") are common English that other areas' messages may still hold
                    runs.update(r for r in (r.strip(".,;:!?()") for r in english_sentences(text))
                                if len(r.split()) >= 4 or r == whole)
    return frozenset(runs)

def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err

def assert_cli_strings_chinese(text: str) -> None:
    left = sorted(r for r in cli_english_runs() if r in text)
    assert not left, f"English CLI strings under --lang zh: {left[:10]}"
    assert CJK.search(text), "no Chinese at all"

def assert_no_english_sentence(text: str) -> None:
    left = english_sentences(text)
    assert not left, f"English sentences under --lang zh: {left[:10]}"

# ---------------------------------------------------------------------------------------------- the checker

def test_the_strict_list_is_not_empty_and_catches_english():
    runs = cli_english_runs()
    assert len(runs) > 100
    assert "no instance type fits these limits" in runs  # a table footer id of tables.py
    with pytest.raises(AssertionError):
        assert_cli_strings_chinese("中文 then: no instance type fits these limits")

def test_english_is_the_default(capsys):
    rc, out, err = run_cli(capsys, "memory", "Qwen3-8B", "--gpu", "A10")
    assert rc == 1
    assert "peak phase:" in out and "does not fit (OOM)" in out and "largest micro-batch" in out
    assert not CJK.search(out + err)

# ---------------------------------------------------------------------------------------------- memory

def test_memory_oom_verdict_and_fixes_in_chinese(capsys):
    rc, out, _err = run_cli(capsys, "--lang", "zh", "memory", "Qwen3-8B", "--gpu", "A10")
    assert rc == 1  # the exit code does not depend on the language
    for zh in ("项", "占比", "张量峰值", "预留显存", "峰值阶段：", "显存不足（OOM）", "余量", "最大微批", "试试",
               "全参微调"):
        assert zh in out, zh
    assert_cli_strings_chinese(out)

def test_memory_output_has_no_english_sentence(capsys):
    _rc, out, _err = run_cli(capsys, "--lang", "zh", "memory", "Qwen3-8B", "--gpu", "A10")
    assert_no_english_sentence(out)

def test_memory_json_keeps_english_codes(capsys):
    rc, out, _err = run_cli(capsys, "memory", "Qwen3-8B", "--gpu", "A10", "--json", "--lang", "zh")
    assert rc == 1
    data = json.loads(out)
    assert data["verdict"] == "oom" and data["workload"]["method"] == "full"
    assert {"reserved_gib", "breakdown_gib", "suggestions"} <= set(data)

# ---------------------------------------------------------------------------------------------- plan

def test_plan_table_and_rejections_in_chinese(capsys):
    rc, out, _err = run_cli(capsys, "plan", "Qwen3-8B", "--tokens", "1B", "--top", "3", "--lang", "zh")
    assert rc == 0
    for zh in ("实例规格", "节点×GPU", "设置", "精度", "小时", "费用", "已淘汰", "原因", "修复方法", "优化目标：费用",
               "80% 预测区间"):
        assert zh in out, zh
    assert_cli_strings_chinese(out)

def test_plan_output_has_no_english_sentence(capsys):
    _rc, out, _err = run_cli(capsys, "plan", "Qwen3-8B", "--tokens", "1B", "--top", "3", "--lang", "zh")
    assert_no_english_sentence(out)

def test_plan_json_codes_stay_english(capsys):
    rc, out, _err = run_cli(capsys, "plan", "Qwen3-8B", "--tokens", "1B", "--top", "3", "--json", "--lang", "zh")
    assert rc == 0
    data = json.loads(out)
    assert {"plans", "rejected", "workload"} <= set(data)
    assert data["workload"]["objective"] == "cost" and data["workload"]["method"] == "full"
    codes = {r["code"] for r in data["rejected"]}
    assert codes and all(re.fullmatch(r"[a-z0-9-]+", c) for c in codes)
    assert all(p["fit"]["verdict"] in ("fits", "tight", "unknown") for p in data["plans"] if "fit" in p)

def test_plan_json_messages_are_chinese(capsys):
    _rc, out, _err = run_cli(capsys, "plan", "Qwen3-8B", "--tokens", "1B", "--json", "--lang", "zh")
    for r in json.loads(out)["rejected"]:
        assert_no_english_sentence(r["reason"])
        assert_no_english_sentence(r.get("fix") or "")

# ---------------------------------------------------------------------------------------------- render + check

@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("render")
    assert main(["render", "Qwen3-0.6B", "--instance-type", "ecs.gn7i-c8g1.2xlarge", "--method", "lora",
                 "--out", str(out)]) == 0
    return out

def test_render_in_chinese(capsys, tmp_path):
    rc, out, _err = run_cli(capsys, "--lang", "zh", "render", "Qwen3-8B", "--gpu", "H100", "--method", "lora",
                            "--out", str(tmp_path))
    assert rc == 0
    assert "已向" in out and "写入" in out
    assert_cli_strings_chinese(out)
    # job files are the same in both languages (the tools read them); only the README.md beside them, written for
    # the user, is in the user's language
    en = tmp_path.parent / (tmp_path.name + "-en")
    assert main(["render", "Qwen3-8B", "--gpu", "H100", "--method", "lora", "--out", str(en)]) == 0
    capsys.readouterr()
    for f in sorted(p.name for p in en.iterdir()):
        if f == "README.md":
            assert CJK.search((tmp_path / f).read_text(encoding="utf-8")), f
            continue
        assert (tmp_path / f).read_bytes() == (en / f).read_bytes(), f

def test_check_findings_in_chinese(capsys, rendered):
    rc, out, _err = run_cli(capsys, "--lang", "zh", "check", str(rendered / "dlc_job.json"), "--region", "cn-beijing")
    assert "项发现" in out or "未发现问题" in out
    if "项发现" in out:
        assert "修复：" in out and re.search(r"^\s+(错误|警告|提示)\s", out, re.M)
    assert_cli_strings_chinese(out)
    rc_json, out_json, _err = run_cli(capsys, "--lang", "zh", "check", str(rendered / "dlc_job.json"), "--region",
                                      "cn-beijing", "--json")
    assert rc_json == rc
    data = json.loads(out_json)
    assert all(v["severity"] in ("error", "warning", "info") for v in data["violations"])
    assert all(re.fullmatch(r"[a-z0-9-]+", v["rule"]) for v in data["violations"])

def test_check_output_has_no_english_sentence(capsys, rendered):
    _rc, out, _err = run_cli(capsys, "--lang", "zh", "check", str(rendered / "dlc_job.json"), "--region", "cn-beijing")
    assert_no_english_sentence(out)

# ---------------------------------------------------------------------------------------------- catalog, models

def test_catalog_instances_in_chinese(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    rc, out, _err = run_cli(capsys, "--lang", "zh", "catalog", "show", "instances")
    assert rc == 0
    assert "实例规格" in out and "按量付费" in out and "资源类型" in out
    assert "pai-lingjun" in out  # resource-class codes are what --resource-class takes: not translated
    assert_cli_strings_chinese(out)
    assert_no_english_sentence(out)

def test_models_in_chinese(capsys):
    rc, out, _err = run_cli(capsys, "models", "--lang", "zh")
    assert rc == 0
    assert "trainfit 模型" in out and "层数" in out and "总参数量" in out and "Qwen3-8B" in out
    assert_cli_strings_chinese(out)
    assert_no_english_sentence(out)

def _tiny_tokenizer(folder: Path) -> Path:
    """A byte-level BPE tokenizer with a ChatML template, saved as a model folder (as tests/dataset builds one)."""
    pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.train_from_iterator(["The quick brown fox.", "训练需要多少显存？"] * 10, trainers.BpeTrainer(
        vocab_size=260, special_tokens=["<unk>", "<|im_start|>", "<|im_end|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok.decoder = decoders.ByteLevel()
    tok.save(str(folder / "tokenizer.json"))
    template = ("{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}"
                "{% endfor %}")
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "chat_template": template, "eos_token": "<|im_end|>", "pad_token": "<unk>",
        "tokenizer_class": "PreTrainedTokenizerFast"}))
    return folder

def test_data_stats_in_chinese(capsys, tmp_path):
    tok = _tiny_tokenizer(tmp_path)
    rows = [{"messages": [{"role": "user", "content": "q " * (5 + 7 * i)},
                          {"role": "assistant", "content": "a " * (20 + 11 * i)}]} for i in range(30)]
    data = tmp_path / "train.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n{broken\n")
    rc, out, _err = run_cli(capsys, "--lang", "zh", "data", str(data), "--tokenizer", str(tok), "--seq-len", "128",
                            "--no-progress")
    assert rc == 0
    for zh in ("统计了", "每个样本的 token 数", "每轮 token 数", "拼接到 128", "长度分布直方图", "跳过"):
        assert zh in out, zh
    assert_cli_strings_chinese(out)

# ---------------------------------------------------------------------------------------------- errors

def test_bad_choice_error_and_fix_in_chinese(capsys):
    rc, out, err = run_cli(capsys, "--lang", "zh", "memory", "Qwen3-8B", "--method", "fulll")
    assert rc == 2 and out == ""
    assert err.startswith("错误：--method：必须是以下之一") and "你是不是想用 full" in err
    assert "\n  修复：`trainfit memory --help`" in err
    assert_cli_strings_chinese(err)
    assert_no_english_sentence(err)

def test_bad_count_error_in_chinese(capsys):
    rc, _out, err = run_cli(capsys, "plan", "Qwen3-8B", "--tokens", "abc", "--lang", "zh")
    assert rc == 2
    assert "--tokens：必须是计数" in err and "例如 2B、500M 或 4096" in err
    assert_no_english_sentence(err)

def test_argparse_words_in_chinese(capsys):
    rc, _out, err = run_cli(capsys, "--lang", "zh", "render", "Qwen3-8B", "--gpu", "H100")
    assert rc == 2 and "缺少必需的参数：--out" in err
    rc, _out, err = run_cli(capsys, "--lang", "zh", "plann")
    assert rc == 2 and "无效的选择" in err and "你是不是想用 plan" in err
    rc, _out, err = run_cli(capsys, "--lang", "zh", "models", "--bogus")
    assert rc == 2 and "无法识别的参数：--bogus" in err
    for e in (err,):
        assert_no_english_sentence(e)
    # argparse is given back its own gettext afterwards
    assert argparse._ is gettext.gettext and argparse.ngettext is gettext.ngettext

def test_argparse_words_stay_english_by_default(capsys):
    rc, _out, err = run_cli(capsys, "render", "Qwen3-8B", "--gpu", "H100")
    assert rc == 2 and "the following arguments are required: --out" in err and err.startswith("error: ")
    rc, _out, err = run_cli(capsys, "plann")
    assert rc == 2 and "invalid choice: 'plann'" in err and "(did you mean plan?)" in err

def test_error_json_keeps_code_with_chinese_message(capsys):
    rc, out, _err = run_cli(capsys, "--json", "--lang", "zh", "memory", "Qwen3-8B", "--seq-len", "0")
    assert rc == 2
    e = json.loads(out)["error"]
    assert e["code"] == "bad-input" and "必须 >= 1" in e["message"] and "请使用 [1, 4194304] 范围内的值" in e["message"]
    rc, out, _err = run_cli(capsys, "--lang", "zh", "plan", "Qwen3-8B", "--json")
    e = json.loads(out)["error"]
    assert rc == 2 and e["code"] == "bad-workload" and e["message"] == "要训练多少 token？"

def test_unknown_model_error_shape_in_chinese(capsys):
    rc, _out, err = run_cli(capsys, "--lang", "zh", "memory", "Qwen3-8bb")
    assert rc == 2 and err.startswith("错误：") and "Qwen3-8B" in err

def test_unknown_model_error_has_no_english_sentence(capsys):
    _rc, _out, err = run_cli(capsys, "--lang", "zh", "memory", "Qwen3-8bb")
    assert_no_english_sentence(err)

# ---------------------------------------------------------------------------------------------- help

def test_help_in_chinese_then_english(capsys):
    """The parser is built per call in the language of that call: help texts hold no stale language."""
    assert main(["--lang", "zh", "memory", "--help"]) == 0
    zh = capsys.readouterr().out
    assert zh.startswith("用法：") and "显示此帮助信息并退出" in zh and "训练请求" in zh and "分布式" in zh
    flat = re.sub(r"\s+", "", zh)  # argparse wraps the help texts
    rank = Workload().lora_rank
    assert "梯度检查点（默认开启；--no-grad-ckpt关闭）" in flat and f"LoRA秩（默认{rank}）" in flat
    assert_cli_strings_chinese(zh)
    assert main(["memory", "--help"]) == 0
    en = capsys.readouterr().out
    assert en.startswith("usage:") and f"LoRA rank (default {rank})" in en and not CJK.search(en)

@pytest.mark.parametrize("command", ["plan", "render", "check", "catalog", "data", "diagnose", "watch", "submit",
                                     "serve", "calibrate", "models", "trace"])
def test_every_command_help_in_chinese(capsys, command):
    assert main(["--lang", "zh", command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("用法：")
    assert_cli_strings_chinese(out)

def test_language_per_call_no_stale_text(capsys):
    """zh, then en, then zh in one process: nothing translated is kept between calls (no cache in the CLI)."""
    outs = []
    for lang in ("zh", "en", "zh"):
        rc, out, _err = run_cli(capsys, "--lang", lang, "plan", "Qwen3-8B", "--tokens", "1B", "--top", "2")
        assert rc == 0
        outs.append(out)
    assert CJK.search(outs[0]) and "实例规格" in outs[2]
    assert "instance type" in outs[1] and "实例规格" not in outs[1]

def test_option_table_holds_english_ids():
    """The option table (shared with the web API) keeps English ids; help_text() is the current language's."""
    from trainfit import i18n
    from trainfit.options import WORKLOAD_OPTIONS

    gc = next(o for o in WORKLOAD_OPTIONS if o.name == "grad_ckpt")
    assert gc.help.startswith("gradient checkpointing") and gc.group == "training request"
    with i18n.language("zh"):
        assert gc.help_text().startswith("梯度检查点")
    rank = next(o for o in WORKLOAD_OPTIONS if o.name == "lora_rank")
    assert rank.help_text() == f"LoRA rank (default {Workload().lora_rank})"
