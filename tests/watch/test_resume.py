"""Spot-safe resume, end to end on CPU: a tiny Qwen3 trained by the HF Trainer under ``trainfit watch`` gets a
preemption notice at a random step and a ``kill -9`` of all its processes at another (often in the middle of
a checkpoint save), is relaunched after each, and must end with weights bitwise equal to an uninterrupted
run. Variants: dense, gradient accumulation, LoRA, Qwen3-MoE (router weights compared explicitly)."""

from __future__ import annotations

import json
import os
import random
import time

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from resume_harness import interrupted_run, start_baseline  # noqa: E402

STEPS, SAVE_STEPS = 12, 3


def _expected_resume(log: dict) -> int:
    """The newest complete checkpoint when the third launch starts."""
    saves = [s for s in range(log["notice_at"] + 1, log["hang_at"]) if s % SAVE_STEPS == 0]
    return max([log["notice_at"], *saves])


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["dense", "accum", "lora", "moe"])
def test_notice_and_kill_resume_bitwise(variant, tmp_path):
    if variant == "lora":
        pytest.importorskip("peft")
    seed = int(os.environ.get("TRAINFIT_TEST_SEED", time.time_ns() % 2**31))
    rng = random.Random(seed)
    base = start_baseline(tmp_path / "base", variant, STEPS, SAVE_STEPS)
    log = interrupted_run(tmp_path / "run", variant, steps=STEPS, save_steps=SAVE_STEPS, rng=rng)
    base_out, _ = base.communicate(timeout=300)
    ctx = (f"TRAINFIT_TEST_SEED={seed} notice_at={log['notice_at']} hang_at={log['hang_at']} "
           f"({log['hang_where']})")
    assert base.returncode == 0, base_out[-2000:]

    first, killed, last = log["runs"]
    assert first["rc"] == 143, ctx + first["stderr"]
    assert f"trainer stopped at step {log['notice_at']}" in first["stderr"], ctx + first["stderr"]
    assert killed["killed"] and killed["rc"] == -9, ctx + killed["stderr"]
    assert last["rc"] == 0, ctx + last["stderr"]
    want = _expected_resume(log)
    assert f"resume from {tmp_path / 'run' / 'ckpt' / f'checkpoint-{want}'}" in last["stderr"], ctx + last["stderr"]
    if log["hang_where"] == "save":  # killed mid-save: that checkpoint was set aside, not resumed from
        assert f"checkpoint-{log['hang_at']}" in log["dirs_after_kill"], ctx
        assert any(d.startswith(f"incomplete-checkpoint-{log['hang_at']}-") for d in log["dirs_at_end"]), ctx

    ref = torch.load(tmp_path / "base" / "final.pt")
    got = torch.load(tmp_path / "run" / "final.pt")
    assert ref.keys() == got.keys()
    differ = [k for k in ref if not torch.equal(ref[k], got[k])]
    assert not differ, f"{ctx}: {len(differ)} tensors differ, e.g. {differ[:3]}"

    # the comparison is not vacuous: training moved the weights it trains
    from safetensors.torch import load_file

    ckpt3 = tmp_path / "run" / "ckpt" / "checkpoint-3"
    early = load_file(str(next(ckpt3.glob("*.safetensors"))))
    if variant == "lora":
        lora = [k for k in ref if "lora_B" in k]
        assert lora and all(ref[k].abs().sum() > 0 for k in lora)  # lora_B starts at zero
    else:
        common = [k for k in early if k in ref]  # MoE experts are stored per expert, trained fused
        moved = [k for k in common if not torch.equal(early[k], ref[k])]
        assert len(common) >= 10 and len(moved) >= len(common) // 2, moved
    if variant == "moe":
        router = [k for k in ref if k.endswith("mlp.gate.weight")]
        assert len(router) == 2, router
        for k in router:
            assert torch.equal(ref[k], got[k]), f"{ctx}: router {k} differs"
            assert not torch.equal(early[k], ref[k]), f"router {k} did not train"


@pytest.mark.slow
def test_hf_callback_attached_by_watch(tmp_path):
    """A script that builds its Trainer without TrainfitCallback (as ms-swift or LLaMA-Factory do) still
    stops on a notice, marks the checkpoint complete and writes metrics under ``watch --hf-callback``."""
    import subprocess
    import sys

    from resume_harness import TRAIN, _env

    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "trainfit.cli", "watch", "--notice-file", str(tmp_path / "notice"),
           "--poll-seconds", "0.02", "--hf-callback", "--metrics-path", str(tmp_path / "m.jsonl"), "--",
           sys.executable, TRAIN, str(out), "--steps", "8", "--no-callback"]
    r = subprocess.run(cmd, env=_env(TINY_NOTICE_AT="3", TINY_NOTICE_FILE=str(tmp_path / "notice")),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 143, r.stderr[-3000:]
    assert "trainer stopped at step 3" in r.stderr
    assert (out / "ckpt" / "checkpoint-3" / "trainfit-complete.json").exists()
    assert not (out / "metrics.jsonl").exists()  # the script's own callback was not used
    steps = [json.loads(x)["step"] for x in (tmp_path / "m.jsonl").read_text().splitlines() if '"step"' in x]
    assert steps == [1, 2, 3]


@pytest.mark.slow
def test_two_nodes_stop_together_and_resume_bitwise(tmp_path):
    """Two "nodes" (one torchrun and one ``watch`` each, one CPU rank each, gloo) on this machine. Only node
    0 gets the notice; both ranks stop at its step (one all_reduce), every rank saves its RNG state, rank 0
    marks the checkpoint complete, and both watches exit 143 (node 1 learns of the clean stop from the ack
    its local rank 0 writes). The relaunch of both ends bitwise equal to an uninterrupted 2-rank run."""
    import shutil
    import socket
    import subprocess
    import sys

    from resume_harness import TRAIN, _env

    torchrun = shutil.which("torchrun", path=os.path.dirname(sys.executable)) or shutil.which("torchrun")
    if torchrun is None:
        pytest.skip("torchrun not found")
    out = tmp_path / "run"
    # the uninterrupted run first, alone: run beside the two "nodes" its rendezvous raced theirs for ports on this
    # one machine and a rank could abort (about one run in six)
    base = subprocess.run([torchrun, "--standalone", "--nproc_per_node", "2", TRAIN, str(tmp_path / "base"),
                           "--steps", "6"], env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=300)
    assert base.returncode == 0, base.stdout[-2000:]

    def launch(notice_at: int | None) -> list[subprocess.CompletedProcess]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        procs = []
        for node in (0, 1):
            env = _env()
            if notice_at and node == 0:
                env.update(TINY_NOTICE_AT=str(notice_at), TINY_NOTICE_FILE=str(tmp_path / "notice"))
            cmd = [sys.executable, "-m", "trainfit.cli", "watch", "--poll-seconds", "0.02",
                   "--stop-file", str(tmp_path / f"stop-node{node}"), "--checkpoint-dir", str(out / "ckpt")]
            if node == 0:
                cmd += ["--notice-file", str(tmp_path / "notice")]
            cmd += ["--", torchrun, "--nnodes", "2", "--nproc_per_node", "1", "--node_rank", str(node),
                    "--master_addr", "127.0.0.1", "--master_port", str(port), TRAIN, str(out), "--steps", "6"]
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                          text=True))
        return [subprocess.CompletedProcess(p.args, p.wait(timeout=300), "", p.stderr.read()) for p in procs]

    first = launch(notice_at=2)
    assert [r.returncode for r in first] == [143, 143], [r.stderr[-2000:] for r in first]
    assert all("trainer stopped at step 2" in r.stderr for r in first)
    cp = out / "ckpt" / "checkpoint-2"
    assert json.loads((cp / "trainfit-complete.json").read_text())["world_size"] == 2
    assert (cp / "rng_state_0.pth").exists() and (cp / "rng_state_1.pth").exists()
    (tmp_path / "notice").unlink()
    second = launch(notice_at=None)
    assert [r.returncode for r in second] == [0, 0], [r.stderr[-2000:] for r in second]
    assert all(f"resume from {cp}" in r.stderr for r in second)
    ref, got = torch.load(tmp_path / "base" / "final.pt"), torch.load(out / "final.pt")
    assert [k for k in ref if not torch.equal(ref[k], got[k])] == []
