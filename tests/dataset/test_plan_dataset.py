"""plan --dataset: the token budget, the cut-off and the step count come from a `trainfit data` stats file, and the
rendered job's steps equal the plan's."""

from __future__ import annotations

import json
import math
import random
import re

import pytest

from trainfit.cli import main
from trainfit.dataset.scan import ScanRequest, scan
from trainfit.dataset.stats import pack_count
from trainfit.dataset.template import load_counter


@pytest.fixture(scope="module")
def stats_file(tok_dir, tmp_path_factory):
    rng = random.Random(5)
    rows = [{"messages": [{"role": "user", "content": "q " * rng.randint(5, 300)},
                          {"role": "assistant", "content": "a " * rng.randint(20, 1500)}]} for _ in range(300)]
    d = tmp_path_factory.mktemp("data")
    (d / "train.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    st = scan(ScanRequest(files=(str(d / "train.jsonl"),), counter=load_counter(str(tok_dir)), seq_len=2048))
    path = d / "stats.json"
    path.write_text(json.dumps(st.to_dict()))
    return path, st


def _plan(args, capsys):
    rc = main(["plan", "Qwen3-0.6B", "--method", "lora", "--gpu", "A10", "--max-gpus", "1", "--json", *args])
    out = capsys.readouterr().out
    return rc, json.loads(out)


def test_budget_and_steps_follow_the_data(stats_file, capsys):
    path, st = stats_file
    rc, out = _plan(["--dataset", str(path), "--seq-len", "2048"], capsys)
    assert rc == 0
    p = out["plans"][0]
    gb = p["settings"]["global_batch"]
    assert p["tokens"] == st.packed_sequences * 2048
    assert p["optimizer_steps"] == math.ceil(st.packed_sequences / gb)
    assert p["data"]["rows_per_epoch"] == st.packed_sequences and p["data"]["packing"] is True
    rc, out2 = _plan(["--dataset", str(path), "--seq-len", "2048", "--epochs", "3"], capsys)
    p2 = out2["plans"][0]
    assert p2["tokens"] == pytest.approx(3 * p["tokens"])
    assert p2["hours"] == pytest.approx(3 * p["hours"], rel=0.02)
    assert p2["optimizer_steps"] == math.ceil(3 * st.packed_sequences / p2["settings"]["global_batch"])


def test_no_packing_counts_samples(stats_file, capsys):
    path, st = stats_file
    rc, out = _plan(["--dataset", str(path), "--seq-len", "2048", "--no-packing"], capsys)
    p = out["plans"][0]
    assert p["data"]["rows_per_epoch"] == st.samples
    assert p["tokens"] == st.tokens_after_cut
    assert p["optimizer_steps"] == math.ceil(st.samples / p["settings"]["global_batch"])


def test_cut_off_from_a_percentile(stats_file, capsys):
    path, st = stats_file
    rc, out = _plan(["--dataset", str(path), "--seq-len-percentile", "p50"], capsys)
    p = out["plans"][0]
    have = sorted({st.seq_len, *(c["seq_len"] for c in st.cutoffs)})
    want = next(c for c in have if c >= st.percentiles["p50"])
    assert p["settings"]["seq_len"] == want == p["data"]["seq_len"]
    assert p["data"]["rows_per_epoch"] == st.at(want)["packed_sequences"]
    assert "p50" in p["data"]["seq_len_from"]


def test_rendered_steps_equal_the_plans(stats_file, capsys, tmp_path):
    path, st = stats_file
    rc, out = _plan(["--dataset", str(path), "--seq-len", "2048", "--epochs", "2"], capsys)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(out))
    steps = out["plans"][0]["optimizer_steps"]
    assert main(["render", "--plan", str(plan_file), "--target", "swift", "--out", str(tmp_path / "job")]) == 0
    script = (tmp_path / "job" / "swift_sft.sh").read_text()
    assert re.search(rf"--max_steps {steps}\b", script), script


@pytest.mark.parametrize("extra", [["--tokens", "1B"], ["--dataset-tokens", "1B"]])
def test_two_budgets_are_an_error(stats_file, capsys, extra):
    path, _ = stats_file
    rc = main(["plan", "Qwen3-0.6B", "--dataset", str(path), *extra])
    err = capsys.readouterr().err
    assert rc == 2 and "--dataset" in err and "fix:" in err


def test_bad_stats_files(tmp_path, capsys):
    bad = tmp_path / "x.json"
    bad.write_text('{"schema": "something else"}')
    assert main(["plan", "Qwen3-0.6B", "--dataset", str(bad)]) == 2
    assert "trainfit data" in capsys.readouterr().err
    assert main(["plan", "Qwen3-0.6B", "--dataset", str(tmp_path)]) == 2
    assert main(["plan", "Qwen3-0.6B", "--tokens", "1B", "--seq-len-percentile", "p99"]) == 2
    assert "needs --dataset" in capsys.readouterr().err


def test_plan_file_with_a_tampered_data_record_is_refused(stats_file, capsys, tmp_path):
    path, _ = stats_file
    rc, out = _plan(["--dataset", str(path), "--seq-len", "2048"], capsys)
    out["plans"][0]["data"]["rows_per_epoch"] = -5
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(out))
    assert main(["render", "--plan", str(f), "--out", str(tmp_path / "job")]) == 2
    assert "rows_per_epoch" in capsys.readouterr().err


def test_pack_count_is_what_the_plan_uses(stats_file):
    _, st = stats_file
    assert st.packed_sequences >= 1 and st.at(st.seq_len)["packed_sequences"] == st.packed_sequences
    assert pack_count([10] * 10, 100) == 1
