"""Published minimum-GPU GRPO setups fit; clearly infeasible ones do not (benchmarks/data/rl_setups.yaml)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench():
    spec = importlib.util.spec_from_file_location("rl_setups", ROOT / "benchmarks" / "rl_setups.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


BENCH = _bench()
SETUPS = BENCH.load()


def test_setups_have_sources_and_both_kinds():
    published = [s for s in SETUPS if s["expect"] == "fits"]
    assert all(s["source"].startswith("https://") for s in published)
    assert {s["framework"] for s in published} >= {"verl", "ms-swift"}
    assert {s["workload"]["method"] for s in published} >= {"full", "lora"}
    assert any(s["expect"] == "no-fit" for s in SETUPS)


@pytest.mark.parametrize("setup", SETUPS, ids=[s["id"] for s in SETUPS])
def test_prediction_matches_publication(setup):
    r = BENCH.evaluate(setup)
    assert r["verdict"] == setup["expect"], r


def test_table_lists_every_setup():
    rows = [BENCH.evaluate(s) for s in SETUPS[:2]]
    t = BENCH.table(rows)
    assert all(s["id"] in t for s in SETUPS[:2]) and t.count("\n") == 4


def test_verl_defaults_are_the_values_of_verls_own_config(capsys):
    """The verl row of FRAMEWORK_DEFAULTS against the values of verl's flattened trainer config (read from the
    verl commit cited in tests/rl/data): the trainer's strategy, offload and checkpointing as well as the engine's."""
    import json as _json
    from pathlib import Path

    from trainfit.cli import main
    from trainfit.rl.config import FRAMEWORK_DEFAULTS, trainer_defaults

    verl = _json.loads((Path(__file__).parent / "data" / "verl_ppo_trainer_defaults.json").read_text())["defaults"]
    fd = FRAMEWORK_DEFAULTS["verl"]
    assert fd.strategy == verl["actor_rollout_ref.actor.strategy"] == "fsdp"
    off = (verl["actor_rollout_ref.actor.fsdp_config.param_offload"],
           verl["actor_rollout_ref.actor.fsdp_config.optimizer_offload"])
    assert fd.offload == {(False, False): "none", (False, True): "optimizer", (True, True): "all"}[off]
    assert fd.grad_ckpt is verl["actor_rollout_ref.model.enable_gradient_checkpointing"]
    assert fd.rollout_util == verl["actor_rollout_ref.rollout.gpu_memory_utilization"]
    assert fd.rollout_tp == verl["actor_rollout_ref.rollout.tensor_model_parallel_size"]
    assert fd.engine_sleep is verl["actor_rollout_ref.rollout.free_cache_engine"]
    assert fd.max_num_seqs == verl["actor_rollout_ref.rollout.max_num_seqs"]
    assert fd.ref_offload is verl["actor_rollout_ref.ref.fsdp_config.param_offload"]
    assert trainer_defaults("verl") == {"strategy": "fsdp", "offload": "none", "grad_ckpt": True}
    assert trainer_defaults(None) == {}
    # --rl-framework verl trains with FSDP unless the user says otherwise (memory, the web API and render alike)
    for extra, want in (([], "fsdp"), (["--strategy", "zero3"], "zero3")):
        rc = main(["memory", "Qwen3-8B", "--rl", "grpo", "--rl-framework", "verl", "--num-generations", "8",
                   "--gpu", "H100", "--gpus", "8", "--json", *extra])
        d = _json.loads(capsys.readouterr().out)
        assert rc in (0, 1) and d["workload"]["strategy"] == want and d["workload"]["grad_ckpt"] is True
    rc = main(["memory", "Qwen3-8B", "--rl", "grpo", "--rl-framework", "ms-swift", "--gpu", "H100", "--gpus", "8",
               "--json"])
    assert _json.loads(capsys.readouterr().out)["workload"]["strategy"] == "ddp"  # ms-swift: no DeepSpeed by default
    from trainfit.service_commands import memory_from_options

    rep = memory_from_options({"model": "Qwen3-8B", "rl": "grpo", "rl_framework": "verl", "num_generations": 8,
                               "gpu": "H100", "gpus": 8})
    assert rep.workload.strategy == "fsdp" and rep.workload.seq_len == 1024
