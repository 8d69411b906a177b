"""Issue 26, item 4 and "Done when": a 256-GPU TP4/PP8/EP8 layout that `memory` says fits is planned by `plan`
(not "no-config: raise --max-gpus"), and the plan table shows the whole layout (pp and cp were left out)."""

from __future__ import annotations

import json

from trainfit.cli import main

LAYOUT = ["--gpus", "256", "--tp", "4", "--pp", "8", "--ep", "8", "--strategy", "zero1", "--gpu", "H100",
          "--micro-batch", "1", "--grad-accum", "8"]


def test_memory_fits_and_plan_plans_the_same_256_gpu_layout(capsys):
    assert main(["memory", "Qwen3-235B-A22B", "--method", "full", *LAYOUT, "--json"]) == 0
    mem = json.loads(capsys.readouterr().out)
    assert mem["fit"]["verdict"] in ("fits", "tight"), mem["fit"]
    assert main(["plan", "Qwen3-235B-A22B", "--method", "full", "--tokens", "2B", *LAYOUT, "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["plans"], res["rejected"]
    p = res["plans"][0]
    assert (p["settings"]["tp"], p["settings"]["pp"], p["settings"]["ep"], p["gpus"] if "gpus" in p else
            p["settings"]["gpus"]) == (4, 8, 8, 256)
    assert not any("no-config" in json.dumps(r) or "max-gpus" in json.dumps(r) for r in res["rejected"])


def test_plan_table_names_pipeline_and_context_sizes(capsys):
    assert main(["plan", "Qwen3-235B-A22B", "--method", "full", "--tokens", "2B", *LAYOUT]) == 0
    out = capsys.readouterr().out
    assert "pp8" in out and "ep8" in out and "tp4" in out


def test_check_names_every_parallel_size_of_an_ep_over_data_x_context_script(tmp_path, capsys):
    """EP 8 over data x context ranks (TP2 CP4 on 16 GPUs, DP 2): render writes it, check reads it back and its
    memory finding names the whole layout (cp was left out of the description)."""
    from trainfit.check import check_file

    main(["render", "Qwen3-30B-A3B", "--method", "full", "--tokens", "1B", "--gpus", "16", "--tp", "2",
                 "--cp", "4", "--ep", "8", "--seq-len", "32k", "--gpu", "H800", "--target", "swift",
                 "--out", str(tmp_path), "--checkpoint-uri", "oss://b/c/"])  # exit 1: it warns the layout OOMs
    capsys.readouterr()
    assert "--context_parallel_size 4" in (tmp_path / "swift_sft.sh").read_text()
    r = check_file(tmp_path / "swift_sft.sh")
    text = " ".join(v.message for v in r.violations)
    assert "ep 8, tp 2, cp 4 on 16 GPU(s)" in text, text
