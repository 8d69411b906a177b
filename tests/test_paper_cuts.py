"""Issue 28's paper cuts, one test each: what a new user hit on the first try."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from trainfit.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_tokens_typo_suggests_a_count_not_a_fraction(capsys):
    assert main(["plan", "Qwen3-8B", "--tokens", "abc"]) == 2
    err = capsys.readouterr().err
    assert "2B" in err and "500M" in err
    assert "0.5 or 1e-4" not in err


def test_pai_public_quota_fix_names_the_ignore_rule_flag(capsys):
    main(["check", str(ROOT / "tests/fixtures/check/dlc_public_cap.json"), "--json"])
    out = json.loads(capsys.readouterr().out)
    v = next(v for v in out["violations"] if v["rule"] == "pai-public-quota")
    assert "--ignore-rule pai-public-quota" in v["fix"]


def test_pai_public_quota_rejection_says_ignore_rule_once(capsys):
    main(["plan", "Qwen3-32B", "--method", "full", "--tokens", "2B", "--resource-class", "pai-public", "--json"])
    out = json.loads(capsys.readouterr().out)
    fixes = [r["fix"] for r in out["rejected"] if r["code"] == "pai-public-quota"]
    assert fixes and all(f.count("--ignore-rule pai-public-quota") == 1 for f in fixes)


def test_memory_on_v100_sizes_fp16_as_plan_does(capsys):
    assert main(["memory", "Qwen3-8B", "--method", "lora", "--gpu", "V100", "--json"]) in (0, 1)
    out = json.loads(capsys.readouterr().out)
    assert out["workload"]["precision"] == "fp16"
    assert any("no bf16" in w for w in out["warnings"])
    main(["memory", "Qwen3-8B", "--method", "lora", "--gpu", "V100"])
    assert "no bf16" in capsys.readouterr().out
    # the same figure plan gives a V100 plan with this layout: one rule for both
    main(["memory", "Qwen3-8B", "--method", "lora", "--gpu", "H100", "--json"])
    assert json.loads(capsys.readouterr().out)["workload"]["precision"] == "bf16"


def test_host_ram_oom_says_host_ram_not_gpu_headroom(capsys):
    assert main(["memory", "Qwen3-8B", "--method", "lora", "--gpu", "A100", "--host-ram", "4"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "does not fit in host RAM" in out
    assert "does not fit (OOM) on" not in out


def test_platform_rule_sources_cite_urls_not_local_files():
    from trainfit.rules import load_rules

    for r in load_rules():
        assert re.search(r"https://\S+", r.source), (r.id, r.source)
        assert "shared/reference" not in r.source and ".md" not in r.source.replace("README.md", ""), r.id


@pytest.mark.parametrize("columns", [100, 130, 200])
def test_catalog_show_instances_is_readable_in_a_normal_terminal(columns, monkeypatch, capsys):
    """Below ~200 columns every instance type was broken over three lines ('ecs.gn6i-' / 'c4g1.xlar' / 'ge')."""
    from trainfit.catalog import list_instances

    monkeypatch.setenv("COLUMNS", str(columns))
    assert main(["catalog", "show", "instances"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(len(ln) for ln in lines) <= columns
    rows = list_instances(provider=None, resource_class=None, gpu=None)
    for r in rows:  # whole, with its class and GPU on the same line
        assert any(r.instance_type in ln and r.resource_class in ln and (r.gpu or "-") in ln for ln in lines), r.instance_type
    header = next(ln for ln in lines if "instance type" in ln)
    for col in ("class", "gpu", "vCPU", "RAM", "price/h"):
        assert col in header.split() or col in header


def test_readme_set_up_creates_a_virtual_environment_first():
    """Debian's system pip refuses `pip install -e .` (PEP 668): the two set-up commands make a venv first."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    setup = readme.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)\n```", setup, re.S)
    assert len(commands) == 2
    for cmd in commands:
        assert cmd.startswith("python3 -m venv .venv && . .venv/bin/activate && pip install"), cmd
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "python3 -m venv" in ci
    install_and_test = commands[1].split(". .venv/bin/activate && ", 1)[1]
    assert install_and_test in ci  # .ci/run runs the README's install-and-test command in its own venv


def _codes(capsys, *argv) -> int:
    rc = main(list(argv))
    capsys.readouterr()
    return rc


def test_one_exit_code_table_for_every_command(tmp_path, capsys):
    """0 fits / 1 does not fit or nothing plans / 2 bad input (README 'Exit status'), the same for each command."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "### Exit status" in readme
    # 0: fits
    assert _codes(capsys, "memory", "Qwen3-0.6B", "--method", "lora", "--gpu", "A100") == 0
    assert _codes(capsys, "plan", "Qwen3-0.6B", "--method", "lora", "--tokens", "100M", "--json") == 0
    assert _codes(capsys, "render", "Qwen3-0.6B", "--method", "lora", "--gpu", "A100", "--out",
                  str(tmp_path / "ok")) == 0
    # 1: does not fit / nothing plans (GPU or host RAM)
    assert _codes(capsys, "memory", "Qwen3-14B", "--method", "full", "--gpu", "A10") == 1
    assert _codes(capsys, "memory", "Qwen3-14B", "--method", "full", "--gpu", "A10", "--json") == 1
    assert _codes(capsys, "memory", "Qwen3-8B", "--method", "lora", "--gpu", "A100", "--host-ram", "4") == 1
    assert _codes(capsys, "plan", "Qwen3-8B", "--method", "full", "--tokens", "2B", "--gpu", "A10",
                  "--max-gpus", "1") == 1
    assert _codes(capsys, "render", "Qwen3-14B", "--method", "full", "--gpu", "A10", "--out",
                  str(tmp_path / "oom")) == 1
    assert (tmp_path / "oom").is_dir()  # the files are still written, with the warning
    # 2: bad input, for every command that takes a model or a value
    for argv in (["memory", "Qwen3-8X"], ["plan", "Qwen3-8B", "--tokens", "abc"],
                 ["render", "Qwen3-8B", "--gpu", "NoSuchGPU", "--out", str(tmp_path / "bad")],
                 ["check", str(tmp_path / "missing.json")], ["catalog", "show", "nothing"],
                 ["memory", "Qwen3-8B", "--seq-len", "4x"]):
        assert _codes(capsys, *argv) == 2, argv


def test_watch_doc_says_what_render_writes(tmp_path, capsys):
    """docs/watch.md said render does not wrap launches in `watch`; it does."""
    doc = (ROOT / "docs" / "watch.md").read_text(encoding="utf-8")
    assert "does not yet wrap" not in doc
    assert main(["render", "Qwen3-0.6B", "--method", "lora", "--gpu", "A100", "--target", "torchrun",
                 "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    launch = (tmp_path / "launch.sh").read_text(encoding="utf-8")
    assert "$WATCH torchrun" in launch and 'WATCH="trainfit watch ' in launch
    assert "$WATCH torchrun" in doc


def test_diagnose_input_wait_figures_agree_with_the_percentage():
    """'54 % of step' was printed next to 'median data wait 0.202 of a 0.221 s step' (91 %): a few long waits
    make the total fraction and the medians disagree. The per-step figures are now the means of the same totals."""
    from trainfit.diagnose import diagnose

    steps = []
    for i in range(1, 41):  # most steps wait 0.2 of 0.22 s; every fourth step computes 1 s without waiting
        wait, step = (0.0, 1.0) if i % 4 == 0 else (0.2, 0.22)
        steps.append({"step": i, "time_unix": 1000.0 + i, "step_seconds": step, "data_wait_seconds": wait,
                      "compute_seconds": step - wait, "tokens": 1000, "tokens_per_s": 1000 / step,
                      "loss": 2.0 - 0.01 * i})
    f = next(f for f in diagnose([], steps).findings if f.code == "input-bound")
    pct = float(re.match(r"(\d+) %", f.message).group(1))
    wait_s, step_s = map(float, re.search(r"([\d.]+) s of a mean ([\d.]+) s step", f.message).groups())
    assert abs(100 * wait_s / step_s - pct) <= 1.5, f.message
    assert abs(pct - 100 * f.data["data_wait_fraction"]) <= 0.5


def test_watch_says_when_the_provider_metadata_service_cannot_be_reached(monkeypatch, tmp_path):
    """`watch --provider alibaba` off an Alibaba instance polled 100.100.100.200 in silence: it looked as if it
    listened for reclaim notices. It now warns once (a closed 127.0.0.1 port stands in for the address)."""
    import dataclasses
    import socket
    import sys

    from trainfit.watch import notice
    from trainfit.watch.runner import WatchConfig, run_watch

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setitem(notice.PROVIDERS, "alibaba", dataclasses.replace(
        notice.PROVIDERS["alibaba"], url=f"http://127.0.0.1:{port}/latest/meta-data/instance/spot/termination-time"))
    lines: list[str] = []
    cfg = WatchConfig(command=(sys.executable, "-c", "import time; time.sleep(0.5)"), providers=("alibaba",),
                      poll_seconds=0.02, stop_file=str(tmp_path / "stop"), log=lines.append)
    assert run_watch(cfg) == 0
    warned = [ln for ln in lines if "metadata service cannot be reached" in ln]
    assert len(warned) == 1, lines  # once, not every poll
    assert "alibaba" in warned[0] and "SIGTERM" in warned[0]


def test_watch_is_quiet_when_the_metadata_service_answers_404(monkeypatch, tmp_path):
    import dataclasses
    import http.server
    import sys
    import threading

    from trainfit.watch import notice
    from trainfit.watch.runner import WatchConfig, run_watch

    class NoNotice(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the documented answer when no reclaim is scheduled
            self.send_response(404)
            self.end_headers()

        def log_message(self, *a):
            pass

    srv = http.server.HTTPServer(("127.0.0.1", 0), NoNotice)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        monkeypatch.setitem(notice.PROVIDERS, "alibaba", dataclasses.replace(
            notice.PROVIDERS["alibaba"], url=f"http://127.0.0.1:{srv.server_address[1]}/termination-time"))
        lines: list[str] = []
        cfg = WatchConfig(command=(sys.executable, "-c", "import time; time.sleep(0.3)"), providers=("alibaba",),
                          poll_seconds=0.02, stop_file=str(tmp_path / "stop"), log=lines.append)
        assert run_watch(cfg) == 0
        assert not [ln for ln in lines if "cannot be reached" in ln], lines
    finally:
        srv.shutdown()
        srv.server_close()
