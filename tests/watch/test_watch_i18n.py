"""trainfit watch in 简体中文: its errors, fixes and progress messages come from the catalog (the default stays
English)."""

from __future__ import annotations

import re
import types

import pytest

from tests._lang import english_sentences
from trainfit import i18n
from trainfit.errors import WatchError
from trainfit.watch import monitoring, notice
from trainfit.watch.runner import WatchConfig, _say_reachability

HAN = re.compile(r"[\u4e00-\u9fff]")


@pytest.mark.parametrize("make", [
    lambda: WatchConfig(command=()),
    lambda: WatchConfig(command=("x",), providers=("nimbus",)),
    lambda: WatchConfig(command=("x",), restart_exit_code=0),
    lambda: WatchConfig(command=("x",), poll_seconds=-1),
    lambda: WatchConfig(command=("x",), metrics_path="m.jsonl"),
    lambda: notice.custom_source("ftp://x"),
    lambda: monitoring._check("bad name!", 9400, 8, 15),
    lambda: monitoring._check("job", 65535, 8, 15),
])
def test_watch_errors_in_chinese(make):
    msgs = {}
    for lang in ("en", "zh"):
        with i18n.language(lang), pytest.raises(WatchError) as e:
            make()
        msgs[lang] = (e.value.code, e.value.message, e.value.fix or "")
    assert msgs["en"][0] == msgs["zh"][0]
    assert not HAN.search(msgs["en"][1])
    assert HAN.search(msgs["zh"][1]) and english_sentences(msgs["zh"][1] + "\n" + msgs["zh"][2]) == []


def test_unreachable_metadata_warning_in_chinese():
    said: list[str] = []
    cfg = types.SimpleNamespace(log=said.append, notice_file=None)
    poller = types.SimpleNamespace(reachable=False, error="timed out",
                                   src=types.SimpleNamespace(provider="alibaba", url="http://100.100.100.200/x"))
    with i18n.language("zh"):
        _say_reachability(cfg, poller)
        poller.reachable = True
        _say_reachability(cfg, poller)
    assert len(said) == 2
    assert "alibaba" in said[0] and "SIGTERM" in said[0] and "--provider" in said[0]
    for line in said:
        assert HAN.search(line) and english_sentences(line.replace("timed out", "")) == [], line
