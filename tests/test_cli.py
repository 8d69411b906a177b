"""CLI: fast core imports, JSON shape, clear errors."""

import json
import subprocess
import sys

import pytest

from trainfit.cli import main

HEAVY = ("torch", "transformers", "pandas", "peft")


def test_core_imports_no_heavy_modules():
    code = ("import sys, trainfit.cli, trainfit.estimate.memory, trainfit.estimate.fit; "
            "from trainfit.cli import build_parser; build_parser(); "
            f"bad=[m for m in {HEAVY!r} if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("argv", [
    ["memory", "Qwen3-8B", "--gpu", "A100", "--json"],
    ["plan", "Qwen3-8B", "--tokens", "1B", "--json"],
    ["check", "tests/fixtures/check/launch_world_size.sh", "--json"],
    ["catalog", "show", "gpus", "--json"],
])
def test_core_commands_import_no_heavy_modules(argv):
    code = ("import sys; from trainfit.cli import main; "
            f"main({argv!r}); "
            f"bad=[m for m in {HEAVY!r} if m in sys.modules]; sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_memory_json_keys(capsys):
    assert main(["memory", "Qwen3-8B", "--seq-len", "4k", "--gpu-mem", "80", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for k in ("model", "params", "tensor_peak_gib", "reserved_gib", "peak_phase", "breakdown_gib", "host_ram_gib",
              "fits", "max_micro_batch", "max_seq_len", "assumptions"):
        assert k in out
    assert set(out["params"]) == {"total", "trainable", "active"}
    assert set(out["breakdown_gib"]) == {"weights", "gradients", "optimizer", "activations", "logits_loss",
                                         "temporaries", "overhead"}
    assert out["params"]["total"] == 8_190_735_360
    assert out["fits"] is True
    assert out["workload"]["seq_len"] == 4096
    assert sum(out["breakdown_gib"].values()) == pytest.approx(out["reserved_gib"], abs=0.01)


def test_memory_table(capsys):
    assert main(["memory", "qwen/qwen3-0.6b", "--method", "lora", "--gpu-mem", "24"]) == 0
    out = capsys.readouterr().out
    assert "reserved" in out and "fits" in out


def test_config_option(tmp_path, capsys):
    cfg = {"model_type": "qwen3", "hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 28,
           "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
           "tie_word_embeddings": True}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    assert main(["memory", "--config", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"]["total"] == 596_049_920


@pytest.mark.parametrize("argv,needle", [
    (["memory", "Qwen3-9B"], "did you mean"),
    (["memory", "Qwen3-8B", "--gpus", "3", "--tp", "2"], "not divisible"),
    (["memory", "--config", "/nonexistent/x"], "no config file"),
    (["memory", "Qwen3-8B", "--gpu-mem", "-1"], "must be >"),
])
def test_user_errors_are_clear(argv, needle, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_error_json(capsys):
    assert main(["memory", "Qwen3-9B", "--json"]) == 2
    out = json.loads(capsys.readouterr().out)
    assert out["error"]["code"] == "unknown-model"


def test_models_json(capsys):
    assert main(["models", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["name"] for r in rows} >= {"Qwen3-8B", "Qwen3-Next-80B-A3B"}


def test_console_script():
    r = subprocess.run(["trainfit", "memory", "Qwen3-1.7B", "--json"], capture_output=True, text=True)
    assert r.returncode == 0 and json.loads(r.stdout)["model"] == "Qwen3-1.7B"


def test_refresh_without_credentials_is_one_clear_error(tmp_path):
    pytest.importorskip("alibabacloud_credentials")
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("ALIBABA_CLOUD_")}
    env.update(HOME=str(tmp_path), ALIBABA_CLOUD_ECS_METADATA_DISABLED="true", XDG_CACHE_HOME=str(tmp_path / "c"),
               XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    r = subprocess.run(["trainfit", "catalog", "refresh", "--provider", "pai", "--region", "cn-hangzhou"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode != 0
    assert "credentials" in r.stderr and "Traceback" not in r.stderr


def test_core_commands_never_import_heavy_libraries(tmp_path):
    """plan, memory, check and render run without torch, transformers, pandas, web or metrics libraries."""
    import subprocess
    import sys

    code = (
        "import sys, io, contextlib\n"
        "from trainfit.cli import main\n"
        f"out = {str(tmp_path)!r}\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main(['memory', 'Qwen3-8B', '--gpu', 'A10', '--json']) in (0, 1)\n"
        "    assert main(['plan', 'Qwen3-8B', '--tokens', '1B', '--json']) in (0, 1)\n"
        "    assert main(['render', 'Qwen3-8B', '--gpu', 'H100', '--out', out]) == 0\n"
        "    main(['check', out + '/launch.sh'])\n"
        "heavy = ('torch', 'transformers', 'pandas', 'fastapi', 'uvicorn', 'starlette', 'prometheus_client', 'peft')\n"
        "bad = [m for m in heavy if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


@pytest.mark.parametrize("gpu, warned", [("A100", True), ("H800", False)])
def test_memory_warns_when_the_gpu_cannot_run_the_kernel(gpu, warned, capsys):
    """`memory --attention flash3` on an A100: the memory verdict alone ("fits") would disagree with `check`'s
    kernel-support error on the same settings; the table and --json carry the kernel gate's warning."""
    argv = ["memory", "Qwen3-8B", "--method", "lora", "--gpu", gpu, "--attention", "flash3"]
    assert main(argv + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "fits"
    assert any("FlashAttention-3" in w for w in out["warnings"]) == warned
    assert main(argv) == 0
    assert ("warning: FlashAttention-3" in capsys.readouterr().out) == warned


def test_bad_option_value_is_one_error_not_a_usage_dump(capsys):
    """argparse printed ~40 lines of usage before the error, and nothing on stdout under --json."""
    assert main(["memory", "Qwen3-8B", "--seq-len", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --seq-len: must be >= 1") and "usage:" not in err and len(err.splitlines()) == 2
    assert "[1, 4194304]" in err
    assert main(["memory", "Qwen3-8B", "--seq-len", "0", "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["error"]["code"] == "bad-input" and doc["error"]["message"].startswith("--seq-len: must be >= 1")


def test_unknown_command_or_choice_suggests_the_nearest(capsys):
    assert main(["plna", "Qwen3-8B"]) == 2
    assert "did you mean plan?" in capsys.readouterr().err
    assert main(["catalog", "show", "gpu"]) == 2
    assert "did you mean gpus?" in capsys.readouterr().err
