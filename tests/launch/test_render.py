"""Render targets: files, headers, PAI-DLC variables, spot wiring, argument names, DLC SDK round trip, CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from tests.launch.conftest import make_plan, SCENARIOS, make_ctx
from trainfit.cli import main
from trainfit.launch import TARGETS, RenderError, render

DATA = Path(__file__).parent / "data"
TORCHRUN = ("torchrun --nnodes=$WORLD_SIZE --node_rank=$RANK --nproc_per_node=$NPROC_PER_NODE "
            "--master_addr=$MASTER_ADDR --master_port=$MASTER_PORT")


def test_all_targets_write_their_files(rendered):
    d, res = rendered["zero3"]
    names = {p.name for p in d.iterdir()}
    assert {"ds_config.json", "swift_sft.sh", "llamafactory.yaml", "launch.sh", "dlc_job.json", "dlc_submit.sh",
            "pytorchjob.yaml", "skypilot.yaml", "README.md"} <= names
    assert res.skipped == {}
    assert (d / "launch.sh").stat().st_mode & 0o111


def test_megatron_plan_skips_deepspeed_and_llamafactory(rendered):
    _, res = rendered["megatron"]
    assert set(res.skipped) == {"deepspeed", "llamafactory"}
    assert "megatron sft" in res.files["swift_sft.sh"]
    with pytest.raises(RenderError):
        render(make_ctx("megatron"), "deepspeed")


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_file_carries_the_plan_header(rendered, name):
    d, res = rendered[name]
    for fname, text in res.files.items():
        if fname == "dlc_job.json":
            body = json.loads(text)
            assert "memory:" in body["UserCommand"]  # the script inside carries it
            continue
        if fname == "ds_config.json":
            hdr = json.loads(text)["_trainfit"]["header"]
            assert any(h.startswith("memory:") for h in hdr)
            continue
        assert "# memory:" in text and "# speed:" in text and "# cost:" in text, fname
    assert "memory:" in (d / "README.md").read_text()


def test_torchrun_reads_pai_variables(rendered):
    _, res = rendered["zero3"]
    assert TORCHRUN in res.files["launch.sh"]
    assert TORCHRUN in json.loads(res.files["dlc_job.json"])["UserCommand"]
    swift = res.files["swift_sft.sh"]
    assert 'NNODES="${WORLD_SIZE:-1}"' in swift and 'NODE_RANK="${RANK:-0}"' in swift
    assert "nproc_per_node=$WORLD_SIZE" not in res.files["launch.sh"]


def test_spot_wires_checkpoint_and_resume(rendered):
    _, res = rendered["zero3"]
    body = json.loads(res.files["dlc_job.json"])
    spec = body["JobSpecs"][0]
    assert spec["UseSpotInstance"] is True and spec["SpotSpec"]["SpotStrategy"] == "SpotWithPriceLimit"
    assert body["DataSources"] == [{"Uri": "oss://bkt/ckpt/", "MountPath": "/mnt/checkpoints", "MountAccess": "RW"}]
    assert body["Settings"]["EnableErrorMonitoringInAIMaster"] is True
    for f in ("launch.sh", "swift_sft.sh"):
        assert "--resume_from_checkpoint $d" in res.files[f]
        assert "--output_dir /mnt/checkpoints/" in res.files[f]
    lf = yaml.safe_load(res.files["llamafactory.yaml"])
    assert lf["output_dir"].startswith("/mnt/checkpoints/") and lf["overwrite_output_dir"] is False
    sky = yaml.safe_load(res.files["skypilot.yaml"])
    assert sky["resources"]["use_spot"] is True and "job_recovery" in sky["resources"]
    assert "/mnt/checkpoints" in sky["file_mounts"]
    pj = yaml.safe_load(res.files["pytorchjob.yaml"])
    assert pj["spec"]["pytorchReplicaSpecs"]["Worker"]["restartPolicy"] == "OnFailure"


def test_megatron_resume(rendered):
    _, res = rendered["megatron"]
    assert "--mcore_model $CKPT_DIR --finetune false" in res.files["launch.sh"]
    assert "--global_batch_size 64" in res.files["launch.sh"]  # 1 x 8 x (16 / tp 2)


def test_lingjun_body_has_vpc_rdma_and_general_spot_bids_market(rendered):
    body = json.loads(rendered["megatron"][1].files["dlc_job.json"])
    assert body["UserVpc"]["VpcId"] == "vpc-test" and body["Settings"]["EnableRDMA"] is True
    assert body["ResourceId"] == "quota-test" and "UseSpotInstance" not in body["JobSpecs"][0]
    general = json.loads(rendered["lora1"][1].files["dlc_job.json"])
    assert general["JobSpecs"][0]["SpotSpec"] == {"SpotStrategy": "SpotAsPriceGo"}
    assert "UserVpc" not in general and general["JobSpecs"][0]["PodCount"] == 1


def test_deepspeed_numbers_match_the_plan(rendered):
    ds = json.loads(rendered["qlora"][1].files["ds_config.json"])
    assert ds["train_batch_size"] == 2 * 2 * 4 and ds["train_micro_batch_size_per_gpu"] == 2
    assert ds["zero_optimization"]["stage"] == 2 and ds["zero_optimization"]["offload_optimizer"]["device"] == "cpu"
    assert ds["fp16"]["enabled"] is True and "bf16" not in ds


def _swift_flags(script: str) -> list[str]:
    body = script.split("$RESUME")[0]
    cmd = body[body.rindex("swift.cli.") if "-m swift" in body else body.rindex("sft \\"):]
    return re.findall(r"^\s+--([a-z_0-9]+) ", cmd, flags=re.M)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_swift_arguments_exist_in_ms_swift(rendered, name):
    """ms-swift cannot be imported next to this project's transformers/peft pins; its argument dataclass
    fields, read from the ms-swift 4.6.0 wheel (see data/extract_arg_names.py), stand in for its parser."""
    doc = json.loads((DATA / "ms_swift_args.json").read_text())
    res = rendered[name][1]
    cmd = "megatron_sft" if "megatron sft" in res.files["swift_sft.sh"] else "sft"
    known = set(doc["commands"][cmd]["fields"])
    for f in ("swift_sft.sh", "launch.sh"):
        flags = _swift_flags(res.files[f])
        assert flags, f
        unknown = [x for x in flags if x not in known]
        assert not unknown, f"{name}/{f}: not ms-swift {cmd} arguments: {unknown}"


def test_arg_name_check_can_fail():
    doc = json.loads((DATA / "ms_swift_args.json").read_text())
    assert "train_type" not in doc["commands"]["sft"]["fields"]  # renamed tuner_type in ms-swift 4
    assert "tuner_type" in doc["commands"]["sft"]["fields"]


@pytest.mark.parametrize("name", ["lora1", "zero3", "qlora"])
def test_llamafactory_keys_exist_in_its_parser(rendered, name):
    """LLaMA-Factory 0.9.5's HfArgumentParser rejects unknown keys; its dataclass fields (from the wheel)
    stand in for importing it (it needs transformers <= 5.6 and peft <= 0.18.1)."""
    doc = json.loads((DATA / "llamafactory_args.json").read_text())
    known = set(doc["commands"]["train"]["fields"])
    cfg = yaml.safe_load(rendered[name][1].files["llamafactory.yaml"])
    assert not [k for k in cfg if k not in known]


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_dlc_body_round_trips_through_the_sdk_model(rendered, name):
    models = pytest.importorskip("alibabacloud_pai_dlc20201203.models")
    result = rendered[name][1]
    if make_plan(name).provider != "alibaba":
        assert "dlc_job.json" not in result.files and "Alibaba" in result.skipped["dlc"]
        return
    body = json.loads(rendered[name][1].files["dlc_job.json"])
    back = models.CreateJobRequest().from_map(body).to_map()

    def strip_empty(x):
        if isinstance(x, dict):
            return {k: strip_empty(v) for k, v in x.items() if v != []}
        if isinstance(x, list):
            return [strip_empty(v) for v in x]
        return x

    assert strip_empty(back) == body  # no key dropped or renamed by the official model


def test_round_trip_test_catches_a_misspelt_field():
    models = pytest.importorskip("alibabacloud_pai_dlc20201203.models")
    body = {"DisplayName": "x", "JobType": "PyTorchJob", "UserCommand": "true",
            "JobSpecs": [{"Type": "Worker", "PodCnt": 2, "Image": "i", "EcsSpec": "e"}]}
    back = models.CreateJobRequest().from_map(body).to_map()
    assert "PodCnt" not in back["JobSpecs"][0]


def test_unknown_target_and_bad_instance_fit():
    with pytest.raises(RenderError) as e:
        render(make_ctx("lora1"), "deepspeeed")
    assert "deepspeed" in (e.value.fix or "")
    from trainfit.models import get_model
    from trainfit.service import plan_for
    from trainfit.workload import Workload

    with pytest.raises(RenderError):  # 8 GPUs per node on a 1-GPU instance
        plan_for(get_model("Qwen3-8B"), Workload(gpus=16, gpus_per_node=8), instance_type="ecs.gn7i-c8g1.2xlarge")
    with pytest.raises(RenderError) as e:  # a generic plan never becomes a PAI job
        render(make_ctx("qlora"), "dlc")
    assert "Alibaba" in e.value.message and "swift" in (e.value.fix or "")


def test_cli_render_from_options(tmp_path, capsys):
    rc = main(["render", "Qwen3-8B", "--method", "lora", "--instance-type", "ecs.gn7i-c8g1.2xlarge",
               "--target", "dlc,torchrun", "--out", str(tmp_path), "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(out["written"]) == ["README.md", "dlc_job.json", "dlc_submit.sh", "launch.sh"]


def _plan_file(tmp_path, capsys, *argv):
    assert main(["plan", *argv, "--json"]) in (0, 1)
    doc = json.loads(capsys.readouterr().out)
    p = tmp_path / "plan.json"
    p.write_text(json.dumps(doc))
    return p, doc


def test_cli_render_from_plan_json(tmp_path, capsys):
    plan, doc = _plan_file(tmp_path, capsys, "Qwen3-8B", "--method", "lora", "--tokens", "200M", "--provider",
                           "alibaba")
    best = doc["plans"][0]
    out = tmp_path / "out"
    assert main(["render", "--plan", str(plan), "--pick", "1", "--out", str(out), "--target", "all"]) == 0
    text = (out / "launch.sh").read_text()
    assert f"{best['tokens_per_s']:,.0f} tokens/s" in text and f"{best['per_gpu_gib']:,.2f} GiB" in text
    body = json.loads((out / "dlc_job.json").read_text())
    assert body["JobSpecs"][0]["PodCount"] == best["nodes"]
    assert body["JobSpecs"][0]["EcsSpec"] == best["instance_type"]
    steps = -(-200_000_000 // (best["settings"]["micro_batch"] * best["settings"]["grad_accum"]
                               * best["settings"]["gpus"] * best["settings"]["seq_len"]))
    assert f"--max_steps {steps}" in text


def test_plan_json_round_trips_losslessly(tmp_path, capsys):
    from trainfit.plan.types import Plan

    _, doc = _plan_file(tmp_path, capsys, "Qwen3-30B-A3B", "--tokens", "1B", "--gpu", "H100")
    for d in doc["plans"]:
        p = Plan.from_dict(json.loads(json.dumps(d)))
        assert p.to_dict() == d
        assert p.memory.reserved_gib == d["per_gpu_gib"] and p.workload.ep == d["settings"]["ep"]


@pytest.mark.parametrize("content,pick,needle", [
    ("{not json", 1, "malformed JSON"), (json.dumps({"plans": []}), 1, "schema"),
    (json.dumps({"schema": "trainfit.plan/2", "plans": []}), 1, "holds no plan"),
    (json.dumps({"schema": "trainfit.plan/9", "plans": [{}]}), 1, "trainfit.plan/2"),
    (json.dumps({"schema": "trainfit.plan/2", "plans": [5]}), 1, "not an object"),
    (json.dumps({"schema": "trainfit.plan/2", "plans": [{"schema": "trainfit.plan/2", "settings": {}}]}), 1, "shape"),
])
def test_cli_render_bad_plan_is_one_clear_error(tmp_path, capsys, content, pick, needle):
    plan = tmp_path / "plan.json"
    plan.write_text(content)
    rc = main(["render", "--plan", str(plan), "--pick", str(pick), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and needle in err and "Traceback" not in err


def test_targets_list_is_complete():
    assert TARGETS == ("deepspeed", "swift", "llamafactory", "torchrun", "dlc", "pytorchjob", "skypilot", "verl",
                       "swift_grpo", "monitoring")


def test_experts_impl_is_written_for_hf_moe_and_read_back(rendered):
    """--experts-impl grouped_mm (transformers 5) reaches `swift sft --experts_impl` and comes back from check;
    the Megatron scenario and dense models write nothing (ms-swift 4.x rejects the flag under transformers < 5)."""
    from trainfit.check.facts import read_facts
    from trainfit.check.readback import read_workload
    from trainfit.check.rules import CheckOptions

    d, res = rendered["zero3"]
    assert "--experts_impl grouped_mm" in res.files["swift_sft.sh"]
    assert "transformers>=5,<5.17" in res.files["swift_sft.sh"]  # ms-swift refuses the flag under transformers 4
    rb = read_workload(read_facts(d / "swift_sft.sh"), CheckOptions())
    assert rb.workload.experts_impl == "grouped_mm"
    for name in ("megatron", "lora1"):
        assert "--experts_impl" not in rendered[name][1].files["swift_sft.sh"]


def test_attention_kernel_is_written_and_read_back(rendered, tmp_path):
    """`megatron sft` gets --attention_backend (sdpa -> auto: TransformerEngine's own choice, cuDNN fused attention
    on Hopper, not ms-swift's default flash); a Megatron script without it reads as that default (FlashAttention-2, said as assumed);
    FlashAttention-3 reaches `swift sft --attn_impl` and LLaMA-Factory's `flash_attn: fa3` and comes back."""
    from trainfit.check.facts import read_facts
    from trainfit.check.readback import read_workload
    from trainfit.check.rules import CheckOptions
    from trainfit.launch import RenderOptions, build_context
    from trainfit.models import get_model
    from trainfit.service import plan_for
    from trainfit.workload import Workload

    d, res = rendered["megatron"]
    text = res.files["swift_sft.sh"]
    assert "--attention_backend auto" in text
    assert read_workload(read_facts(d / "swift_sft.sh"), CheckOptions()).workload.attention == "sdpa"
    bare = tmp_path / "swift_sft.sh"
    bare.write_text(text.replace("    --attention_backend auto \\\n", ""))
    rb = read_workload(read_facts(bare), CheckOptions())
    assert rb.workload.attention == "flash" and any("attention_backend flash" in a for a in rb.assumed)

    plan = plan_for(get_model("Qwen3-8B"), Workload(method="lora", gpus=8, gpus_per_node=8, attention="flash3"),
                    gpu="H800")
    out = render(build_context(plan, RenderOptions(checkpoint_uri="oss://bkt/ckpt/")), "all")
    assert "--attn_impl flash_attention_3" in out.files["swift_sft.sh"]
    assert "flash_attn: fa3" in out.files["llamafactory.yaml"]
    for name in ("swift_sft.sh", "llamafactory.yaml"):
        (tmp_path / name).write_text(out.files[name])
        assert read_workload(read_facts(tmp_path / name), CheckOptions()).workload.attention == "flash3", name


def test_render_warns_when_hf_moe_speed_assumed_the_transformers4_loop(rendered):
    """A Hugging Face MoE plan timed with the per-expert loop (--experts-impl modulelist) renders jobs that install
    transformers 5 (grouped_mm experts): render says so; grouped_mm plans, Megatron jobs and dense models do not."""
    from trainfit.launch.targets import experts_mismatch
    from trainfit.workload import Workload

    wl = Workload(method="full", gpus=8, strategy="zero3")  # experts_impl modulelist by default
    w = experts_mismatch(["swift", "llamafactory", "monitoring"], wl, True)
    assert len(w) == 1 and "swift, llamafactory" in w[0] and "--experts-impl grouped_mm" in w[0]
    assert experts_mismatch(["swift"], wl.with_(experts_impl="grouped_mm"), True) == ()
    assert experts_mismatch(["swift"], wl, False) == ()
    assert experts_mismatch(["swift"], wl.with_(tp=2, strategy="zero1"), True) == ()  # megatron sft
    assert not any("grouped_mm" in x for x in rendered["zero3"][1].warnings)  # that scenario plans grouped_mm
    assert not any("per-expert" in x for x in rendered["megatron"][1].warnings)
