"""The data -> plan -> render flow: `--dataset FILE --tokenizer DIR` counts the dataset in place (the same scan as
`trainfit data`), `memory --dataset` sizes the real longest row, render writes the dataset, cut-off and packing the
plan assumed, for ms-swift and LLaMA-Factory."""

from __future__ import annotations

import json
import random
import re

import pytest
import yaml

from trainfit.cli import main
from trainfit.dataset.scan import ScanRequest, scan
from trainfit.dataset.template import load_counter


def _rows(n=200, seed=7):
    rng = random.Random(seed)
    return [{"messages": [{"role": "user", "content": "q " * rng.randint(5, 200)},
                          {"role": "assistant", "content": "a " * rng.randint(20, 900)}]} for _ in range(n)]


@pytest.fixture(scope="module")
def data(tok_dir, tmp_path_factory):
    d = tmp_path_factory.mktemp("flow")
    f = d / "train.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in _rows()))
    st = scan(ScanRequest(files=(str(f),), counter=load_counter(str(tok_dir)), seq_len=1024))
    stats = d / "stats.json"
    stats.write_text(json.dumps(st.to_dict(), indent=2))
    return f, stats, st


def _plan(args, capsys):
    rc = main(["plan", "Qwen3-0.6B", "--method", "lora", "--gpu", "A10", "--max-gpus", "1", "--json", *args])
    out = capsys.readouterr()
    assert rc == 0, out.err
    return json.loads(out.out)


def test_dataset_counted_in_place_plans_as_the_stats_file(data, tok_dir, capsys):
    f, stats, st = data
    from_stats = _plan(["--dataset", str(stats), "--seq-len", "1024"], capsys)["plans"][0]
    in_place = _plan(["--dataset", str(f), "--tokenizer", str(tok_dir), "--seq-len", "1024"], capsys)["plans"][0]
    for k in ("rows_per_epoch", "data_tokens_per_epoch", "seq_len", "truncated_share", "longest_gib_len"):
        assert in_place["data"][k] == from_stats["data"][k], k
    assert in_place["tokens"] == from_stats["tokens"] == st.packed_sequences * 1024
    assert in_place["optimizer_steps"] == from_stats["optimizer_steps"]
    assert in_place["data"]["counted_here"] is True and from_stats["data"]["counted_here"] is False
    assert in_place["data"]["data_format"] == "messages"


def test_dataset_without_tokenizer_says_how(data, capsys):
    f, stats, _ = data
    assert main(["plan", "Qwen3-0.6B", "--dataset", str(f)]) == 2
    err = capsys.readouterr().err
    assert "--tokenizer" in err and "trainfit data" in err and "Traceback" not in err
    assert main(["plan", "Qwen3-0.6B", "--dataset", str(stats), "--tokenizer", "/nonexistent"]) == 2
    assert "stats file" in capsys.readouterr().err
    assert main(["plan", "Qwen3-0.6B", "--tokens", "1B", "--tokenizer", "/x"]) == 2
    assert "needs --dataset" in capsys.readouterr().err


def test_a_compact_stats_file_is_a_stats_file(data, tmp_path, capsys):
    _, _, st = data
    compact = tmp_path / "s.json"
    compact.write_text(json.dumps(st.to_dict()))
    p = _plan(["--dataset", str(compact), "--seq-len", "1024"], capsys)["plans"][0]
    assert p["data"]["rows_per_epoch"] == st.packed_sequences
