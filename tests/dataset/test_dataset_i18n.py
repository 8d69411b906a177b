"""trainfit data / plan --dataset in 简体中文: errors, fixes and the budget note come from the catalog; codes stay
English; the default stays English."""

from __future__ import annotations

import json
import re

import pytest

from tests._lang import english_sentences
from trainfit import i18n
from trainfit.dataset import formats, stats_or_scan
from trainfit.dataset.budget import DataBudget
from trainfit.dataset.template import load_counter
from trainfit.errors import DatasetError, WorkloadError

HAN = re.compile(r"[\u4e00-\u9fff]")


def _both(fn):
    """The error ``fn`` raises in English and in Chinese."""
    out = {}
    for lang in ("en", "zh"):
        with i18n.language(lang), pytest.raises((DatasetError, WorkloadError, ValueError)) as e:
            fn()
        out[lang] = e.value
    return out["en"], out["zh"]


def _chinese(text: str) -> None:
    assert HAN.search(text), text
    assert english_sentences(text) == [], text


def test_dataset_errors_in_chinese_codes_in_english(tmp_path):
    data = tmp_path / "train.jsonl"
    data.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n")
    cases = [
        lambda: stats_or_scan(str(data), tokenizer=None),        # a dataset without --tokenizer
        lambda: load_counter(str(tmp_path / "nowhere")),         # --tokenizer not a folder
        lambda: load_counter(str(tmp_path)),                     # a folder without tokenizer.json
    ]
    for case in cases:
        en, zh = _both(case)
        assert en.code == zh.code and not HAN.search(en.message) and not HAN.search(en.fix or "")
        _chinese(zh.message)
        _chinese(zh.fix)


@pytest.mark.parametrize("row", [
    [1, 2],
    {"messages": []},
    {"messages": [{"role": "robot", "content": "x"}]},
    {"conversations": [{"from": "alien", "value": "x"}]},
    {"history": "no", "instruction": "a", "output": "b"},
    {"messages": [{"role": "user", "content": "only a question"}]},
    {"unknown": 1},
])
def test_row_errors_in_chinese(row):
    en, zh = _both(lambda: formats.to_turns(row, "auto", {}))
    assert not HAN.search(str(en))
    _chinese(str(zh))


def test_budget_note_in_both_languages():
    b = DataBudget(stats_file="stats.json", files=("train.jsonl",), seq_len=4096, seq_len_from="--seq-len",
                   packing=True, epochs=2, rows_per_epoch=1000, data_tokens_per_epoch=3_000_000,
                   truncated_share=0.01, packing_efficiency=0.93, longest_gib_len=4096)
    with i18n.language("en"):
        en = (b.describe(), b.memory_note())
    with i18n.language("zh"):
        zh = (b.describe(), b.memory_note())
    assert "packed rows" in en[0] and "sized at the longest row" in en[1]
    for text in zh:
        _chinese(text)
    assert "4,096" in zh[0] and "93.0%" in zh[0]  # the figures, formatted as in English


def test_default_is_english():
    with pytest.raises(WorkloadError) as e:
        from trainfit.dataset.budget import budget_from_values

        budget_from_values({"tokenizer": "x"})
    assert e.value.message == "--tokenizer needs --dataset"
