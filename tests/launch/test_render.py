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


@pytest.mark.parametrize("gpu, gaps", [("A100", 1), ("H800", 0)])
def test_render_warns_when_the_gpu_cannot_run_the_kernel(gpu, gaps, tmp_path, capsys):
    """`--attention flash3` off Hopper: `plan` warns and `check` errors (kernel-support), so `render` must not write
    those files silently: a warning on the terminal, in RenderResult.warnings and in the folder's README.md."""
    from trainfit.launch import RenderOptions, build_context
    from trainfit.models import get_model
    from trainfit.service import plan_for
    from trainfit.workload import Workload

    plan = plan_for(get_model("Qwen3-8B"), Workload(method="lora", gpus=8, gpus_per_node=8, attention="flash3"),
                    gpu=gpu)
    res = render(build_context(plan, RenderOptions(checkpoint_uri="oss://bkt/ckpt/")), "all")
    assert len([w for w in res.warnings if "FlashAttention-3" in w]) == gaps
    assert main(["render", "Qwen3-8B", "--method", "lora", "--gpus", "8", "--attention", "flash3", "--gpu", gpu,
                 "--target", "swift", "--out", str(tmp_path / "job")]) == 0
    out = capsys.readouterr().out
    assert ("warning: FlashAttention-3" in out) == bool(gaps)
    assert ("FlashAttention-3" in (tmp_path / "job" / "README.md").read_text()) == bool(gaps)


def test_hand_written_megatron_script_reads_ms_swifts_defaults(tmp_path):
    """A `megatron sft` script without --use_distributed_optimizer / --recompute_granularity / --sequence_parallel
    runs with ms-swift's defaults (true / selective / false). They were read as no distributed optimizer, full
    recompute and sequence parallel on, so check sized another job (too much optimizer memory, far too little
    activation memory). Rendered scripts write all three, so their round trip is unchanged."""
    from trainfit.check.facts import read_facts
    from trainfit.check.readback import read_workload
    from trainfit.check.rules import CheckOptions

    f = tmp_path / "train.sh"
    f.write_text("#!/bin/bash\nNPROC_PER_NODE=8 megatron sft --model Qwen/Qwen3-8B --tuner_type full "
                 "--micro_batch_size 1 --global_batch_size 16 --tensor_model_parallel_size 2 --max_length 4096\n")
    rb = read_workload(read_facts(f), CheckOptions(gpu="H800"))
    wl = rb.workload
    assert (wl.strategy, wl.grad_ckpt, wl.sequence_parallel) == ("zero1", False, False)
    for flag in ("use_distributed_optimizer", "recompute_granularity", "sequence_parallel"):
        assert any(a.startswith(flag) for a in rb.assumed), flag
    explicit = f.read_text().replace("--max_length 4096", "--max_length 4096 --use_distributed_optimizer false "
                                     "--recompute_granularity full --sequence_parallel true")
    f.write_text(explicit)
    wl = read_workload(read_facts(f), CheckOptions(gpu="H800")).workload
    assert (wl.strategy, wl.grad_ckpt, wl.sequence_parallel) == ("ddp", True, True)


@pytest.mark.parametrize("impl, attention, noted", [("flash_attention_2", "flash", False), ("flash_attn", "flash", False),
                                                    ("flash_attention_4", "sdpa", True)])
def test_attn_impl_names_are_read_back(impl, attention, noted, tmp_path):
    """transformers' own name flash_attention_2 (accepted by ms-swift) was read silently as sdpa; a name trainfit
    does not model is now said as assumed."""
    from trainfit.check.facts import read_facts
    from trainfit.check.readback import read_workload
    from trainfit.check.rules import CheckOptions

    f = tmp_path / "train.sh"
    f.write_text(f"#!/bin/bash\nswift sft --model Qwen/Qwen3-8B --tuner_type lora --attn_impl {impl}\n")
    rb = read_workload(read_facts(f), CheckOptions(gpu="A100"))
    assert rb.workload.attention == attention
    assert any(impl in a for a in rb.assumed) == noted


@pytest.mark.parametrize("extra", [["Qwen3-14B"], ["--method", "full"], ["--seq-len", "4k"], ["--gpu", "A100"],
                                   ["--no-grad-ckpt"]])
def test_render_plan_refuses_options_the_plan_fixes(extra, tmp_path, capsys):
    """`render --plan plan.json Qwen3-14B --method full` rendered the plan's own model and settings in silence."""
    assert main(["plan", "Qwen3-8B", "--method", "lora", "--tokens", "1B", "--gpu", "H800", "--json"]) == 0
    (tmp_path / "plan.json").write_text(capsys.readouterr().out)
    base = ["render", "--plan", str(tmp_path / "plan.json"), "--out", str(tmp_path / "job")]
    assert main(base + extra) == 2
    assert "would be ignored" in capsys.readouterr().err
    assert main(base + ["--region", "cn-beijing", "--checkpoint-uri", "oss://b/c/"]) == 0  # job options are fine


def test_render_without_plan_keeps_the_workload_defaults(tmp_path):
    """render's workload options are unset (None) unless given, so --plan can tell; without --plan the Workload's
    defaults still apply (full fine-tuning, seq 2048, GC on)."""
    from trainfit.cli import build_parser
    from trainfit._cli.render import plan_from_args

    args = build_parser().parse_args(["render", "Qwen3-8B", "--gpu", "H800", "--out", str(tmp_path)])
    wl = plan_from_args(args).workload
    assert (wl.method, wl.seq_len, wl.grad_ckpt, wl.micro_batch) == ("full", 2048, True, 1)


def test_render_json_carries_what_the_table_prints(tmp_path, capsys):
    """The table prints the budget (optimizer steps, checkpoint interval) and why the verdict is not 'fits'; --json
    had neither."""
    assert main(["render", "Qwen3-8B", "--method", "full", "--gpus", "8", "--gpu", "A10", "--tokens", "10M",
                 "--out", str(tmp_path / "job"), "--json"]) == 1  # written, but it does not fit: exit 1
    s = json.loads(capsys.readouterr().out)["summary"]
    assert s["verdict"] == "oom" and s["memory"]["reasons"] and "GiB" in s["memory"]["reasons"][0]
    assert s["steps"]["max_steps"] > 0 and s["steps"]["save_steps"] > 0


def test_a_config_model_is_not_rendered_as_a_made_up_qwen_repo(tmp_path, capsys):
    """`render --config my-folder` wrote `--model Qwen/my-folder` (a repo that does not exist), and `check` then
    said "no problems found" without checking memory. Now: the folder's path (a local model), a REPLACE_ME
    placeholder when the path cannot be written safely, and an info finding that the fit was not checked."""
    from trainfit.check import check_file

    cfg = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 1024,
           "intermediate_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 8,
           "head_dim": 128, "vocab_size": 151936, "tie_word_embeddings": True, "max_position_embeddings": 40960}
    for folder, expect in (("my-model", None), ("odd name", "REPLACE_ME/odd-name")):
        d = tmp_path / folder
        d.mkdir()
        (d / "config.json").write_text(json.dumps(cfg))
        out = tmp_path / ("job-" + folder.replace(" ", "-"))
        assert main(["render", "--config", str(d), "--gpu", "A10", "--target", "swift", "--out", str(out)]) == 0
        text = (out / "swift_sft.sh").read_text()
        assert "--model Qwen/" not in text
        assert f"--model {expect or d.resolve()} " in text
        rules = {v.rule: v for v in check_file(out / "swift_sft.sh").violations}
        assert "not checked" in rules["memory-fit"].message
        assert ("placeholder" in rules) == bool(expect)


def test_render_warns_when_hf_moe_speed_assumed_the_transformers4_loop(rendered):
    """A Hugging Face MoE plan timed with the per-expert loop (--experts-impl modulelist) renders jobs that install
    transformers 5 (grouped_mm experts): render says so; grouped_mm plans, Megatron jobs and dense models do not."""
    from trainfit.targets import experts_mismatch
    from trainfit.workload import Workload

    wl = Workload(method="full", gpus=8, strategy="zero3")  # experts_impl modulelist by default
    w = experts_mismatch(["swift", "llamafactory", "monitoring"], wl, True)
    assert len(w) == 1 and "swift, llamafactory" in w[0] and "--experts-impl grouped_mm" in w[0]
    assert experts_mismatch(["swift"], wl.with_(experts_impl="grouped_mm"), True) == ()
    assert experts_mismatch(["swift"], wl, False) == ()
    assert experts_mismatch(["swift"], wl.with_(tp=2, strategy="zero1"), True) == ()  # megatron sft
    assert not any("grouped_mm" in x for x in rendered["zero3"][1].warnings)  # that scenario plans grouped_mm
    assert not any("per-expert" in x for x in rendered["megatron"][1].warnings)


def test_rl_launches_write_no_attention_kernel_so_no_kernel_warning(tmp_path, capsys):
    """verl / swift rlhf launches do not write --attention: render must not say `check` rejects them."""
    from trainfit.check import check_file

    assert main(["render", "Qwen3-8B", "--rl", "grpo", "--gpu", "A100", "--attention", "flash3", "--num-generations",
                 "8", "--strategy", "fsdp", "--gpus", "8", "--out", str(tmp_path)]) == 0
    assert "FlashAttention-3" not in capsys.readouterr().out
    assert not [v for v in check_file(tmp_path / "verl_rl.sh").violations if v.rule == "kernel-support"]


def test_all_plus_a_named_target_renders_both(rendered):
    """`--target all,monitoring` dropped monitoring (an on-request target) and `all,swiftt` passed the typo."""
    ctx = rendered["lora1"][1].context
    res = render(ctx, "all,monitoring")
    assert "prometheus-scrape.yaml" in res.files and "swift_sft.sh" in res.files
    with pytest.raises(RenderError, match="did you mean swift"):
        render(ctx, "all,swiftt")
