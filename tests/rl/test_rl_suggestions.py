"""An RL job that does not fit says what to change (README's GRPO example was an OOM with nothing to try), and each
offered change really fits under the RL memory model."""

from __future__ import annotations

import json

from trainfit.cli import main

README_RL = ["memory", "Qwen3-8B", "--method", "lora", "--rl", "grpo", "--rl-framework", "ms-swift", "--gpu", "H100",
             "--prompt-len", "1k", "--response-len", "3k"]


def _json(capsys, args):
    rc = main([*args, "--json"])
    return rc, json.loads(capsys.readouterr().out)


def test_oom_rl_job_offers_changes_that_fit(capsys):
    rc, out = _json(capsys, README_RL)
    assert rc == 1 and out["rl"]["verdict"] == "oom"
    sugs = out["rl"]["suggestions"]
    assert sugs, "an OOM RL job must say what to try"
    for s in sugs:
        rc2, alt = _json(capsys, README_RL + s["change"].split())
        assert rc2 == 0 and alt["rl"]["verdict"] == "fits", s
        assert abs(alt["rl"]["peak_gib"] - s["peak_gib"]) < 0.01


def test_fitting_rl_job_has_no_suggestions(capsys):
    rc, out = _json(capsys, README_RL + ["--rollout-util", "0.5"])
    assert rc == 0 and out["rl"]["suggestions"] == []


def test_try_lines_printed(capsys):
    assert main(README_RL) == 1
    assert "try --rollout-util" in capsys.readouterr().out
