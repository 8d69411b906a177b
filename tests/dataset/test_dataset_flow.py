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


LAUNCH_DATA = __import__("pathlib").Path(__file__).parents[1] / "launch" / "data"


def _render(plan_file, out, capsys, *extra):
    rc = main(["render", "--plan", str(plan_file), "--target", "swift,llamafactory", "--out", str(out), *extra])
    text = capsys.readouterr().out
    assert rc == 0, text
    return text


def _swift_arg(script, name):
    m = re.search(rf"^\s+--{name} (\S+)", script, flags=re.M)
    return None if m is None else m.group(1).strip("'")


@pytest.mark.parametrize("packing", [True, False])
def test_render_writes_the_plans_data_cut_off_and_packing(data, capsys, tmp_path, packing):
    f, stats, st = data
    out = _plan(["--dataset", str(stats), "--seq-len-percentile", "p90", "--epochs", "2"]
                + ([] if packing else ["--no-packing"]), capsys)
    p = out["plans"][0]
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(out))
    job = tmp_path / "job"
    _render(plan_file, job, capsys)
    script = (job / "swift_sft.sh").read_text()
    assert _swift_arg(script, "dataset") == str(f)
    assert _swift_arg(script, "max_length") == str(p["data"]["seq_len"]) == str(p["settings"]["seq_len"])
    assert (_swift_arg(script, "packing") == "true") is packing
    assert _swift_arg(script, "max_steps") == str(p["optimizer_steps"])
    cfg = yaml.safe_load((job / "llamafactory.yaml").read_text())
    assert cfg["cutoff_len"] == p["data"]["seq_len"] and cfg["packing"] is packing
    assert cfg["max_steps"] == p["optimizer_steps"]
    assert cfg["dataset_dir"] == "." and cfg["dataset"] in json.loads((job / "dataset_info.json").read_text())
    entry = json.loads((job / "dataset_info.json").read_text())[cfg["dataset"]]
    assert entry["file_name"] == str(f) and entry["formatting"] == "sharegpt"
    assert entry["columns"]["messages"] == "messages" and entry["tags"]["role_tag"] == "role"
    known = set(json.loads((LAUNCH_DATA / "llamafactory_args.json").read_text())["commands"]["train"]["fields"])
    assert not [k for k in cfg if k not in known]
    # check reads the budget back as the data's rows: no step-budget finding on a file rendered as planned
    for name in ("swift_sft.sh", "llamafactory.yaml"):
        assert main(["check", str(job / name), "--json"]) in (0, 1)
        res = json.loads(capsys.readouterr().out)
        assert not [v for v in res["violations"] if v["rule"] == "step-budget"], res["violations"]


def test_check_reads_a_changed_step_count_against_the_data(data, capsys, tmp_path):
    _, stats, _ = data
    out = _plan(["--dataset", str(stats), "--seq-len", "1024", "--no-packing"], capsys)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(out))
    _render(plan_file, tmp_path / "job", capsys)
    script = (tmp_path / "job" / "swift_sft.sh").read_text()
    steps = out["plans"][0]["optimizer_steps"]
    edited = tmp_path / "edited.sh"
    edited.write_text(re.sub(rf"--max_steps {steps}\b", f"--max_steps {steps * 3}", script))
    main(["check", str(edited), "--json"])
    found = [v for v in json.loads(capsys.readouterr().out)["violations"] if v["rule"] == "step-budget"]
    assert found and f"{steps:,} steps" in found[0]["message"] and "samples" in found[0]["message"]


def test_a_data_path_the_gate_refuses_stays_a_placeholder(tok_dir, tmp_path, capsys):
    d = tmp_path / "my data"
    d.mkdir()
    f = d / "train.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in _rows(20)))
    out = _plan(["--dataset", str(f), "--tokenizer", str(tok_dir)], capsys)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(out))
    text = _render(plan_file, tmp_path / "job", capsys)
    assert "REPLACE_ME" in _swift_arg((tmp_path / "job" / "swift_sft.sh").read_text(), "dataset")
    assert "dataset left as REPLACE_ME" in text and "spaces" in text
    assert not (tmp_path / "job" / "dataset_info.json").exists()


def test_render_model_counts_the_dataset_in_place(data, tok_dir, tmp_path, capsys):
    f, _, st = data
    rc = main(["render", "Qwen3-0.6B", "--method", "lora", "--gpu", "A10", "--dataset", str(f), "--tokenizer",
               str(tok_dir), "--seq-len", "1024", "--micro-batch", "1", "--grad-accum", "4", "--target", "swift",
               "--out", str(tmp_path / "job")])
    assert rc == 0, capsys.readouterr()
    script = (tmp_path / "job" / "swift_sft.sh").read_text()
    assert _swift_arg(script, "dataset") == str(f.resolve())
    assert _swift_arg(script, "max_steps") == str(-(-st.packed_sequences // 4))
    assert _swift_arg(script, "max_length") == "1024"


def test_alpaca_rows_are_described_as_alpaca(tok_dir, tmp_path, capsys):
    f = tmp_path / "a.jsonl"
    f.write_text("\n".join(json.dumps({"query": "q " * 9, "response": "a " * 30, "system": "be brief"})
                           for _ in range(30)))
    out = _plan(["--dataset", str(f), "--tokenizer", str(tok_dir)], capsys)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(out))
    _render(plan_file, tmp_path / "job", capsys)
    entry = json.loads((tmp_path / "job" / "dataset_info.json").read_text())["trainfit_data"]
    assert entry["formatting"] == "alpaca"
    assert entry["columns"] == {"prompt": "query", "query": None, "response": "response", "system": "system"}


def _edit(script: str, **flags) -> str:
    for k, v in flags.items():
        script = re.sub(rf"--{k} \S+", f"--{k} {v}", script)
    return script


def _data_findings(path, stats, capsys, *extra):
    main(["check", str(path), "--dataset", str(stats), "--json", *extra])
    res = json.loads(capsys.readouterr().out)
    return [v for v in res["violations"] if v["rule"] == "data"], res


def test_check_dataset_warns_where_the_job_disagrees_with_the_data(data, capsys, tmp_path):
    _, stats, st = data
    out = _plan(["--dataset", str(stats), "--seq-len-percentile", "max"], capsys)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(out))
    _render(plan_file, tmp_path / "job", capsys)
    script = (tmp_path / "job" / "swift_sft.sh").read_text()
    found, res = _data_findings(tmp_path / "job" / "swift_sft.sh", stats, capsys)
    assert found == [], found  # rendered from the plan of these stats: nothing to say
    assert any("1.00 epoch" in n for n in res["notes"])
    # a cut-off far below the data's lengths: the share the stats give at that cut-off
    short = tmp_path / "short.sh"
    short.write_text(_edit(script, max_length=256))
    found, _ = _data_findings(short, stats, capsys)
    cut = [v for v in found if "truncates" in v["message"]]
    assert cut and f"{st.at(256)['truncated_share']:.1%}" in cut[0]["message"] and cut[0]["severity"] == "warning"
    # no packing: the stats' padding waste at the job's micro-batch (a stats file with long-tailed lengths)
    tailed = tmp_path / "tailed.json"
    d = st.to_dict()
    d["padding_waste"] = {"1": 0.0, "2": 0.3, "4": 0.4, "8": 0.5, "16": 0.6}
    tailed.write_text(json.dumps(d))
    nopack = script.replace("    --packing true \\\n", "")
    for mb, want in ((8, "50%"), (6, "40%"), (1, None)):
        padded = tmp_path / f"padded{mb}.sh"
        padded.write_text(_edit(nopack, per_device_train_batch_size=mb))
        found, _ = _data_findings(padded, tailed, capsys)
        pad = [v for v in found if "padding" in v["message"]]
        assert (want in pad[0]["message"]) if want else not pad, (mb, pad)
    # max_steps covering a third of an epoch
    steps = out["plans"][0]["optimizer_steps"]
    few = tmp_path / "few.sh"
    few.write_text(_edit(script, max_steps=max(1, steps // 3)))
    found, _ = _data_findings(few, stats, capsys)
    assert any("before it has seen all of it" in v["message"] for v in found)


def test_check_dataset_without_a_readable_job(data, capsys, tmp_path):
    _, stats, _ = data
    f = tmp_path / "notes.sh"
    f.write_text("echo hello\n")
    found, _ = _data_findings(f, stats, capsys)
    assert found and found[0]["severity"] == "info"
    assert main(["check", str(f), "--tokenizer", "/x"]) == 2
    assert "--dataset" in capsys.readouterr().err


def test_check_step_budget_sees_packing_changed_after_render(data, capsys, tmp_path):
    _, stats, _ = data
    out = _plan(["--dataset", str(stats), "--seq-len", "1024"], capsys)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(out))
    _render(plan_file, tmp_path / "job", capsys)
    edited = tmp_path / "nopack.sh"
    edited.write_text((tmp_path / "job" / "swift_sft.sh").read_text().replace("    --packing true \\\n", ""))
    main(["check", str(edited), "--json"])
    res = json.loads(capsys.readouterr().out)
    assert any(v["rule"] == "step-budget" and "does not pack" in v["message"] for v in res["violations"])


def _memory(args, capsys):
    rc = main(["memory", "Qwen3-0.6B", "--method", "lora", "--gpu", "A10", "--json", *args])
    out = capsys.readouterr()
    assert rc in (0, 1), out.err
    return json.loads(out.out)


def test_memory_is_sized_at_the_datas_longest_row(data, capsys):
    _, stats, st = data
    packed = _memory(["--dataset", str(stats), "--seq-len", "1024"], capsys)
    assert packed["workload"]["seq_len"] == 1024 and "1,024" in packed["data"]["sized_at"]
    # no packing, a cut-off above every sample: the longest sample is the longest row
    loose = _memory(["--dataset", str(stats), "--seq-len", "65536", "--no-packing"], capsys)
    assert loose["workload"]["seq_len"] == st.max_len and "longest sample" in loose["data"]["sized_at"]
    plain = _memory(["--seq-len", str(st.max_len), "--no-packing"], capsys)
    assert loose["reserved_gib"] == plain["reserved_gib"]  # the same estimate as that length given by hand
    cut = _memory(["--dataset", str(stats), "--seq-len", "512", "--no-packing"], capsys)
    assert cut["workload"]["seq_len"] == 512 < st.max_len
    assert cut["reserved_gib"] < loose["reserved_gib"]


def test_memory_dataset_text_says_what_it_sized(data, capsys):
    _, stats, _ = data
    assert main(["memory", "Qwen3-0.6B", "--method", "lora", "--dataset", str(stats), "--seq-len-percentile",
                 "max"]) == 0
    assert "sized at the longest row" in capsys.readouterr().out
    assert main(["memory", "Qwen3-0.6B", "--rl", "grpo", "--dataset", str(stats)]) == 2
    assert "--dataset" in capsys.readouterr().err


def _metrics(path, tokens, nonpad=None, n=12):
    with open(path, "w") as f:
        f.write(json.dumps({"event": "start"}) + "\n")
        for i in range(1, n + 1):
            r = {"step": i, "time_unix": 1000.0 + i, "step_seconds": 1.0, "data_wait_seconds": 0.0,
                 "compute_seconds": 1.0, "tokens": tokens, "tokens_per_s": tokens}
            if nonpad is not None:
                r["tokens_nonpad"] = nonpad
            f.write(json.dumps(r) + "\n")
    return path


def _diagnose(metrics, plan_file, capsys):
    main(["diagnose", str(metrics), "--plan", str(plan_file), "--json"])
    out = json.loads(capsys.readouterr().out)
    return next(f for f in out["findings"] if f["code"] == "tokens-per-step"), out


@pytest.mark.parametrize("packing", [True, False])
def test_diagnose_compares_tokens_per_step_with_the_datas(data, capsys, tmp_path, packing):
    _, stats, st = data
    out = _plan(["--dataset", str(stats), "--seq-len", "1024", "--micro-batch", "4"]
                + ([] if packing else ["--no-packing"]), capsys)
    p = out["plans"][0]
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(out))
    gb = p["settings"]["global_batch"]
    if packing:
        planned_data = gb * 1024 * st.at(1024)["packing_efficiency"]
        planned_pad = 1 - st.at(1024)["packing_efficiency"]
    else:
        planned_data = gb * st.tokens_after_cut / st.samples
        planned_pad = st.padding_waste["4"]
    f, doc = _diagnose(_metrics(tmp_path / "ok.jsonl", round(planned_data)), plan_file, capsys)
    assert f["severity"] == "info" and f["data"]["tokens_ratio"] == pytest.approx(1.0, abs=0.01)
    assert f["data"]["planned_padding_share"] == pytest.approx(planned_pad)
    assert doc["plan"]["tokens_per_step"]["planned_data_tokens_per_step"] == pytest.approx(planned_data, abs=0.1)
    f, _ = _diagnose(_metrics(tmp_path / "half.jsonl", round(planned_data / 2)), plan_file, capsys)
    assert f["severity"] == "warning" and f["data"]["tokens_ratio"] == pytest.approx(0.5, abs=0.02)
    # the records carry non-padding tokens: padding far above the plan's is a warning
    f, _ = _diagnose(_metrics(tmp_path / "pad.jsonl", round(planned_data / (1 - planned_pad - 0.3)),
                              nonpad=round(planned_data)), plan_file, capsys)
    assert f["data"]["measured_padding_share"] == pytest.approx(planned_pad + 0.3, abs=0.01)
    assert f["severity"] == "warning"


def test_diagnose_tokens_per_step_of_a_token_budget_plan(capsys, tmp_path):
    assert main(["plan", "Qwen3-0.6B", "--method", "lora", "--gpu", "A10", "--max-gpus", "1", "--tokens", "50M",
                 "--seq-len", "2048", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(out))
    gb = out["plans"][0]["settings"]["global_batch"]
    f, _ = _diagnose(_metrics(tmp_path / "m.jsonl", gb * 2048), plan_file, capsys)
    assert f["data"]["tokens_ratio"] == 1.0 and f["data"]["planned_padding_share"] is None
