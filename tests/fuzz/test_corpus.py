"""The hostile-file corpus (tests/fuzz/corpus/ plus a few made at run time: a 200 KB line, a FIFO, /dev/zero, a
file over the size limit, an over-long file name): each one is one clear error and exit 2, fast, in a process
whose memory is capped at 1 GiB. Issue 10 measured 47 s and 3 GB for the alias bomb and a RecursionError for
the deep files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
MEM_MIB = 1024
#: (case id, argv with {c} = corpus folder and {t} = a temporary folder, env, a word the error must contain)
CASES: list[tuple[str, list[str], dict, str]] = [
    ("alias-bomb", ["check", "{c}/alias_bomb.yaml"], {}, "alias"),
    ("deep-json", ["check", "{c}/deep.json"], {}, "deeper than"),
    ("deep-dlc", ["check", "{c}/deep_dlc.json"], {}, "deeper than"),
    ("deep-yaml", ["check", "{c}/deep.yaml"], {}, "deeper than"),
    ("binary", ["check", "{c}/binary.sh"], {}, "binary"),
    ("latin1", ["check", "{c}/latin1.sh"], {}, "UTF-8"),
    ("surrogate-json", ["check", "{c}/surrogate.json", "--json"], {}, "surrogate"),
    ("wrong-types-json", ["check", "{c}/wrong_types.json"], {}, "JobSpecs"),
    ("wrong-types-yaml", ["check", "{c}/wrong_types.yaml"], {}, "Master"),
    ("nan-json", ["check", "{c}/nan_ds_config.json"], {}, "not allowed"),
    ("bigint", ["check", "{c}/bigint_dlc.json"], {}, "digits"),
    ("unicode-digits", ["check", "{c}/unicode_digits_dlc.json"], {}, "PodCount"),
    ("config-not-utf8", ["memory", "--config", "{c}/not_utf8_config.json"], {}, "UTF-8"),
    ("zero-heads", ["memory", "--config", "{c}/zero_heads"], {}, "num_attention_heads"),
    ("layers-1e9", ["memory", "--config", "{c}/layers_1e9"], {}, "num_hidden_layers"),
    ("inf-hidden", ["memory", "--config", "{c}/inf_hidden"], {}, "hidden_size"),
    ("string-layers", ["memory", "--config", "{c}/string_layers"], {}, "num_hidden_layers"),
    ("deep-config", ["memory", "--config", "{c}/deep_config"], {}, "deeper than"),
    ("overlay-garbage", ["check", "{c}/../../fixtures/check/dlc_lingjun_no_vpc.json"],
     {"TRAINFIT_CATALOG_OVERLAY": "{c}/overlay_garbage.yaml"}, "overlay"),
    ("overlay-garbage-memory", ["memory", "Qwen3-8B", "--gpu", "A10"],
     {"TRAINFIT_CATALOG_OVERLAY": "{c}/overlay_garbage.yaml"}, "overlay"),
    ("overlay-alias", ["check", "{c}/../../fixtures/check/dlc_lingjun_no_vpc.json"],
     {"TRAINFIT_CATALOG_OVERLAY": "{c}/overlay_alias.yaml"}, "alias"),
    ("overlay-deep", ["plan", "Qwen3-8B", "--tokens", "1B"], {"TRAINFIT_CATALOG_OVERLAY": "{c}/overlay_deep.yaml"},
     "deeper than"),
    ("overlay-inf", ["memory", "Qwen3-8B", "--gpu", "A10"], {"TRAINFIT_CATALOG_OVERLAY": "{c}/overlay_inf.yaml"},
     "finite"),
    ("overlay-injection", ["plan", "Qwen3-8B", "--tokens", "1B"],
     {"TRAINFIT_CATALOG_OVERLAY": "{c}/overlay_injection.yaml"}, "instance_type"),
    ("plan-deep", ["render", "--plan", "{c}/plan_deep.json", "--out", "{t}/r"], {}, "deeper than"),
    ("plan-wrong-types", ["render", "--plan", "{c}/plan_wrong_types.json", "--out", "{t}/r"], {}, "plan"),
    ("huge-line", ["check", "{t}/huge_line.sh"], {}, "limit"),
    ("fifo", ["check", "{t}/fifo.sh"], {}, "not a regular file"),
    ("dev-zero", ["check", "/dev/zero"], {}, "not a regular file"),
    ("dev-zero-config", ["memory", "--config", "/dev/zero"], {}, "not a regular file"),
    ("dev-zero-plan", ["render", "--plan", "/dev/zero", "--out", "{t}/r"], {}, "not a regular file"),
    ("too-big", ["check", "{t}/big.json"], {}, "limit"),
    ("long-name", ["check", "{t}/" + "n" * 300 + ".json"], {}, "name|cannot read"),
    ("directory", ["check", "{t}"], {}, "not a regular file"),
    # issue 27: every other file trainfit reads goes through the same gate
    ("calibrate-deep", ["calibrate", "{c}/deep.json"], {}, "deeper than"),
    ("calibrate-fifo", ["calibrate", "{t}/fifo.sh"], {}, "not a regular file"),
    ("calibrate-dev-zero", ["calibrate", "/dev/zero"], {}, "not a regular file"),
    ("calibrate-wrong-types", ["calibrate", "{t}/probe_wrong.json"], {}, "probe run"),
    ("calibration-file-broken", ["plan", "Qwen3-8B", "--tokens", "1B"],
     {"TRAINFIT_CALIBRATION": "{t}/calibration_broken.yaml"}, "calibration file"),
    ("calibration-file-fifo", ["plan", "Qwen3-8B", "--tokens", "1B"],
     {"TRAINFIT_CALIBRATION": "{t}/fifo.sh"}, "not a regular file"),
    ("calibration-file-huge", ["plan", "Qwen3-8B", "--tokens", "1B"],
     {"TRAINFIT_CALIBRATION": "{t}/huge_sparse"}, "limit"),
    ("diagnose-nan", ["diagnose", "{t}/metrics_nan.jsonl"], {}, "finite"),
    ("diagnose-deep", ["diagnose", "{t}/metrics_deep.jsonl"], {}, "deeper|longer"),
    ("diagnose-dir", ["diagnose", "{t}"], {}, "not a regular file"),
    ("diagnose-dev-zero", ["diagnose", "/dev/zero"], {}, "not a regular file"),
    ("diagnose-huge", ["diagnose", "{t}/huge_sparse"], {}, "limit"),
    ("diagnose-nan-option", ["diagnose", "{t}/metrics_nan.jsonl", "--interruptions-per-hour", "nan"], {},
     "finite|decimal number"),
    ("submit-deep", ["submit", "{c}/deep_dlc.json", "--region", "cn-hangzhou"], {}, "deeper than"),
    ("submit-fifo", ["submit", "{t}/fifo.sh", "--region", "cn-hangzhou"], {}, "not a regular file"),
    ("submit-dev-zero-link", ["submit", "{t}/zero_link.json", "--region", "cn-hangzhou"], {}, "not a regular file"),
    ("watch-nan-grace", ["watch", "--kill-grace-seconds", "nan", "--", "true"], {}, "finite|decimal number"),
    ("watch-inf-poll", ["watch", "--poll-seconds", "inf", "--", "true"], {}, "finite|decimal number"),
    ("render-into-fifo", ["render", "Qwen3-8B", "--gpu", "A10", "--target", "torchrun", "--out", "{t}/fifo_out"], {},
     "FIFO"),
]


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    t = tmp_path_factory.mktemp("corpus")
    (t / "huge_line.sh").write_text("#!/bin/sh\ntorchrun -m swift.cli.sft --model Qwen/Qwen3-8B " + "a" * 200_000 + "\n")
    os.mkfifo(t / "fifo.sh")
    (t / "big.json").write_text('{"UserCommand": "' + "x" * (3 * 2**20) + '"}')
    (t / "probe_wrong.json").write_text('{"runs": {"r1": {"config": {"model": "Qwen3-0.6B", "seq_len": []}, '
                                        '"measured": {"tokens_per_s": 5}}}}')
    (t / "calibration_broken.yaml").write_text("gpus:\n  A10: {hf: {factor: .nan, runs: 1, date: 2026-01-01}}\n")
    with open(t / "huge_sparse", "wb") as f:
        f.truncate(600 * 2**20)
    (t / "metrics_nan.jsonl").write_text('{"step": 1, "step_seconds": NaN, "data_wait_seconds": 0.1}\n')
    (t / "metrics_deep.jsonl").write_text("[" * 5000 + "]" * 5000 + "\n")
    (t / "zero_link.json").symlink_to("/dev/zero")
    (t / "fifo_out").mkdir()
    os.mkfifo(t / "fifo_out" / "launch.sh")
    cases = []
    for _, argv, env, _ in CASES:
        fill = lambda s: s.replace("{c}", str(CORPUS)).replace("{t}", str(t))  # noqa: E731
        cases.append({"argv": [fill(a) for a in argv], "env": {k: fill(v) for k, v in env.items()}, "seconds": 10})
    spec = t / "cases.json"
    spec.write_text(json.dumps(cases))
    env = {**os.environ, "XDG_CONFIG_HOME": str(t / "cfg"), "XDG_CACHE_HOME": str(t / "cache")}
    env.pop("TRAINFIT_CATALOG_OVERLAY", None)
    r = subprocess.run([sys.executable, str(HERE / "corpus_runner.py"), str(spec), str(MEM_MIB)], capture_output=True,
                       text=True, timeout=300, env=env)
    lines = [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
    assert len(lines) == len(CASES), (r.returncode, r.stderr[-3000:])
    return dict(zip([c[0] for c in CASES], lines))


@pytest.mark.parametrize("case,argv,env,needle", CASES, ids=[c[0] for c in CASES])
def test_hostile_file_is_one_clear_error(results, case, argv, env, needle):
    import re

    r = results[case]
    assert not r["hang"] and not r["traceback"], r["traceback"] or "hang"
    assert "Traceback" not in r["err"]
    if "--json" in argv:
        # check --json reports findings as JSON; the hostile value must be refused or reported, never crash output
        assert r["rc"] in (1, 2), r
        assert re.search(needle, r["out"] + r["err"]), r
        return
    assert r["rc"] == 2, r
    assert r["err"].count("error:") == 1 and r["err"].startswith("error:"), r["err"]
    assert re.search(needle, r["err"]), r["err"]
    assert r["seconds"] < 5, r["seconds"]
