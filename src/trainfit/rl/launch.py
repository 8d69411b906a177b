"""RL launch commands: writers for verl (``python3 -m verl.trainer.main_ppo key=value ...``) and ms-swift
(``swift rlhf --rlhf_type grpo ...``), and readers that parse those commands back into an
:class:`~trainfit.rl.RLConfig` and the Workload fields (one decision path: what ``render`` writes,
``check`` reads back and sizes with the same model).

Pure functions over strings; option names from the frameworks' documentation:
verl https://verl.readthedocs.io/en/latest/examples/config.html and
https://github.com/volcengine/verl/blob/main/verl/trainer/config/rollout/rollout.yaml;
ms-swift https://github.com/modelscope/ms-swift/blob/main/docs/source_en/Instruction/Command-line-parameters.md.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import TypeAlias

from trainfit.errors import WorkloadError
from trainfit.i18n import _
from trainfit.rl.config import RLConfig, RLValue
from trainfit.workload import Workload

#: KL coefficient written when a reference model is wanted (verl GRPO examples' kl_loss_coef 0.001;
#: ms-swift's documented beta default 0.04).
VERL_KL_COEF = 0.001
SWIFT_BETA = 0.04


#: A policy-update Workload field as a launch command states it.
WorkloadValue: TypeAlias = str | int | float | bool
#: A value a writer puts on the command line (a tuple: one quoted item each).
ArgValue: TypeAlias = str | int | float | bool | tuple[str, ...] | None


@dataclass(frozen=True, kw_only=True)
class ParsedRL:
    """What a reader recovered from a launch command."""

    framework: str
    model: str | None
    """Model id as written (``Qwen/Qwen3-8B``)."""
    rl: RLConfig
    workload: dict[str, WorkloadValue]
    """Workload fields the command states (pass to ``Workload(**...)``)."""
    unknown: tuple[str, ...] = field(default=())
    """Options the reader does not map (kept for the report)."""

    def workload_obj(self) -> Workload:
        return Workload(**self.workload)


def _hf_id(model_name: str) -> str:
    return model_name if "/" in model_name else f"Qwen/{model_name}"


def _b(v: bool) -> str:
    return "True" if v else "False"


def _truthy(v: str) -> bool:
    return v.strip().strip("'\"").lower() in ("true", "1", "yes", "on")


def _tokens(text: str) -> list[str]:
    """Shell words of a command (line continuations removed, comments dropped)."""
    lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith("#")]
    return shlex.split(" ".join(ln.rstrip().rstrip("\\") for ln in lines))


# ---------------------------------------------------------------------------------------------- verl
def write_verl(model_name: str, rl: RLConfig, wl: Workload) -> str:
    """A verl ``main_ppo`` command line (FSDP backend, colocated hybrid engine) for ``rl`` and ``wl``."""
    if rl.algo == "dpo":
        raise WorkloadError(_("verl has no offline DPO trainer"),
                            fix=_("render DPO for ms-swift (--rl-framework ms-swift)"))
    if not rl.colocate:
        raise WorkloadError(_("the verl writer emits the colocated hybrid engine only"),
                            fix=_("use --colocate, or ms-swift with --no-colocate (vllm_mode server)"))
    if wl.strategy != "fsdp":
        raise WorkloadError(_("verl's FSDP backend shards with FSDP; --strategy {strategy} does not map").format(
                                strategy=wl.strategy),
                            fix=_("use --strategy fsdp for verl"))
    nodes = wl.nodes
    kv: list[tuple[str, ArgValue]] = [
        ("algorithm.adv_estimator", "gae" if rl.algo == "ppo" else "grpo"),
        ("data.train_batch_size", rl.rollout_batch),
        ("data.max_prompt_length", rl.prompt_len),
        ("data.max_response_length", rl.response_len),
        ("actor_rollout_ref.model.path", _hf_id(model_name)),
        ("actor_rollout_ref.model.enable_gradient_checkpointing", _b(wl.grad_ckpt)),
        ("actor_rollout_ref.model.use_fused_kernels", _b(wl.loss == "fused")),
        # one optimizer step per RL step (verl requires train_batch_size >= ppo_mini_batch_size, default 256;
        # verl/workers/config/actor.py validate)
        ("actor_rollout_ref.actor.ppo_mini_batch_size", rl.rollout_batch),
        ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", wl.micro_batch),
        ("actor_rollout_ref.actor.use_kl_loss", _b(rl.ref)),
        ("actor_rollout_ref.actor.kl_loss_coef", VERL_KL_COEF if rl.ref else 0.0),
        ("actor_rollout_ref.actor.fsdp_config.param_offload", _b(rl.trainer_offload or wl.offload == "all")),
        ("actor_rollout_ref.actor.fsdp_config.optimizer_offload", _b(rl.trainer_offload or wl.offload != "none")),
        ("actor_rollout_ref.rollout.name", rl.rollout_engine),
        ("actor_rollout_ref.rollout.gpu_memory_utilization", rl.rollout_util),
        ("actor_rollout_ref.rollout.tensor_model_parallel_size", rl.rollout_tp),
        ("actor_rollout_ref.rollout.n", rl.num_generations),
        ("actor_rollout_ref.rollout.free_cache_engine", _b(rl.engine_sleep)),
        ("actor_rollout_ref.rollout.max_num_batched_tokens", rl.max_num_batched_tokens),
        ("actor_rollout_ref.rollout.max_num_seqs", rl.max_num_seqs),
        # log-prob passes need a micro-batch (verl/utils/config.py check_mutually_exclusive); forward-only, so
        # the policy update's micro-batch is within the planned memory
        ("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu", wl.micro_batch),
        ("actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu", wl.micro_batch),
        ("actor_rollout_ref.ref.fsdp_config.param_offload", _b(rl.ref_offload)),
    ]
    if wl.method in ("lora", "qlora"):
        kv += [("actor_rollout_ref.model.lora_rank", wl.lora_rank),
               ("actor_rollout_ref.model.lora_alpha", wl.lora_alpha),
               # a Hydra list for several modules (a bare a,b on Hydra's command line is a sweep)
               ("actor_rollout_ref.model.target_modules", wl.lora_targets[0] if len(wl.lora_targets) == 1
                else "[" + ",".join(wl.lora_targets) + "]")]
    if rl.has_critic:
        kv += [("critic.model.path", _hf_id(model_name)),
               ("critic.model.enable_gradient_checkpointing", _b(wl.grad_ckpt)),
               ("critic.ppo_micro_batch_size_per_gpu", wl.micro_batch)]
    kv += [("trainer.critic_warmup", 0), ("trainer.n_gpus_per_node", wl.gpus_on_node),
           ("trainer.nnodes", nodes)]
    body = " \\\n    ".join(f"{k}={shlex.quote(str(v))}" for k, v in kv)
    return f"python3 -m verl.trainer.main_ppo \\\n    {body}\n"


def parse_verl(text: str) -> ParsedRL:
    """Read a verl ``main_ppo`` command back (keys verl documents; missing keys take verl's defaults)."""
    toks = _tokens(text)
    if "verl.trainer.main_ppo" not in toks:
        raise WorkloadError(_("not a verl command (no `-m verl.trainer.main_ppo`)"))
    kv: dict[str, str] = {}
    for t in toks:
        if "=" in t and not t.startswith("-"):
            k, v = t.split("=", 1)
            kv[k.lstrip("+")] = v
    g = kv.get
    ar = "actor_rollout_ref."
    adv = g("algorithm.adv_estimator", "gae")
    algo = "ppo" if adv == "gae" else "grpo"
    use_kl = _truthy(g(ar + "actor.use_kl_loss", "False")) or _truthy(g("algorithm.use_kl_in_reward", "False"))
    lora_rank = int(g(ar + "model.lora_rank", "0"))
    user: dict[str, RLValue] = {
        "algo": algo,
        "rollout_engine": g(ar + "rollout.name"),
        "rollout_util": float(g(ar + "rollout.gpu_memory_utilization")) if g(ar + "rollout.gpu_memory_utilization") else None,
        "rollout_tp": int(g(ar + "rollout.tensor_model_parallel_size")) if g(ar + "rollout.tensor_model_parallel_size") else None,
        "num_generations": int(g(ar + "rollout.n")) if g(ar + "rollout.n") else None,
        "prompt_len": int(g("data.max_prompt_length")) if g("data.max_prompt_length") else None,
        "response_len": int(g("data.max_response_length")) if g("data.max_response_length") else None,
        "rollout_batch": int(g("data.train_batch_size")) if g("data.train_batch_size") else None,
        "engine_sleep": _truthy(g(ar + "rollout.free_cache_engine")) if g(ar + "rollout.free_cache_engine") else None,
        "ref": use_kl,
        "ref_offload": _truthy(g(ar + "ref.fsdp_config.param_offload", "False")),
        "trainer_offload": _truthy(g(ar + "actor.fsdp_config.param_offload", "False")),
        # None = the algorithm's default (a critic for PPO), so written-then-read configs compare equal
        "critic": None if (algo == "ppo") == ("critic.model.path" in kv) else ("critic.model.path" in kv),
        "colocate": True,
    }
    if g(ar + "rollout.max_num_batched_tokens"):
        user["max_num_batched_tokens"] = int(g(ar + "rollout.max_num_batched_tokens"))
    if g(ar + "rollout.max_num_seqs"):
        user["max_num_seqs"] = int(g(ar + "rollout.max_num_seqs"))
    rl = RLConfig.for_framework("verl", **user)
    gpn = int(g("trainer.n_gpus_per_node", "8"))
    nnodes = int(g("trainer.nnodes", "1"))
    opt_off = _truthy(g(ar + "actor.fsdp_config.optimizer_offload", "False"))
    wl: dict[str, WorkloadValue] = {
        "method": "lora" if lora_rank > 0 else "full",
        "micro_batch": int(g(ar + "actor.ppo_micro_batch_size_per_gpu", "1")),
        "grad_ckpt": _truthy(g(ar + "model.enable_gradient_checkpointing", "False")),
        "loss": "fused" if _truthy(g(ar + "model.use_fused_kernels", "False")) else "standard",
        "gpus": gpn * nnodes, "gpus_per_node": gpn, "strategy": "fsdp",
        "seq_len": rl.seq_len,
        "offload": "optimizer" if (opt_off and not rl.trainer_offload) else "none",
    }
    if lora_rank > 0:
        wl["lora_rank"] = lora_rank
        wl["lora_alpha"] = int(g(ar + "model.lora_alpha", "16"))
        tm = g(ar + "model.target_modules", "all-linear")
        wl["lora_targets"] = tuple(x.strip() for x in tm.strip("[]").split(",") if x.strip())
    return ParsedRL(framework="verl", model=g(ar + "model.path"), rl=rl, workload=wl)


# ---------------------------------------------------------------------------------------------- ms-swift
_SWIFT_DS = {("zero2", "none"): "zero2", ("zero3", "none"): "zero3", ("zero2", "optimizer"): "zero2_offload",
             ("zero3", "optimizer"): "zero3_offload", ("zero3", "all"): "zero3_offload"}


def write_swift(model_name: str, rl: RLConfig, wl: Workload) -> str:
    """An ms-swift ``swift rlhf`` command (GRPO/PPO with vLLM, or DPO) for ``rl`` and ``wl``."""
    if wl.strategy not in ("ddp", "zero2", "zero3"):
        raise WorkloadError(_("ms-swift rlhf runs DDP or DeepSpeed; --strategy {strategy} does not map").format(
                                strategy=wl.strategy),
                            fix=_("use --strategy zero2 or zero3"))
    args: list[tuple[str, ArgValue]] = [("rlhf_type", rl.algo), ("model", _hf_id(model_name)),
                                   # ms-swift 4.x: tuner_type (train_type before 4.0); QLoRA = LoRA on 4-bit bnb weights
                                   ("tuner_type", "full" if wl.method == "full" else "lora"),
                                   ("torch_dtype", "bfloat16")]
    if wl.method == "qlora":
        args += [("quant_method", "bnb"), ("quant_bits", 4), ("bnb_4bit_quant_type", "nf4")]
    if wl.method in ("lora", "qlora"):
        args += [("lora_rank", wl.lora_rank), ("lora_alpha", wl.lora_alpha),
                 ("target_modules", tuple(wl.lora_targets))]
    if wl.strategy != "ddp":
        ds = _SWIFT_DS.get((wl.strategy, wl.offload))
        if ds is None:
            raise WorkloadError(_("no ms-swift DeepSpeed preset for {strategy} with offload={offload}").format(
                strategy=wl.strategy, offload=wl.offload))
        args.append(("deepspeed", ds))
    args += [("per_device_train_batch_size", wl.micro_batch), ("gradient_accumulation_steps", wl.grad_accum),
             ("gradient_checkpointing", str(wl.grad_ckpt).lower()), ("max_length", rl.seq_len if rl.algo == "dpo" else rl.prompt_len)]
    if wl.loss == "fused":
        args.append(("use_liger_kernel", "true"))
    if rl.algo != "dpo":
        args += [("max_completion_length", rl.response_len), ("num_generations", rl.num_generations),
                 ("generation_batch_size", rl.rollout_batch * rl.num_generations),
                 ("beta", SWIFT_BETA if rl.ref else 0),
                 ("use_vllm", "true"), ("vllm_mode", "colocate" if rl.colocate else "server")]
        if rl.colocate:
            args += [("vllm_gpu_memory_utilization", rl.rollout_util),
                     ("vllm_tensor_parallel_size", rl.rollout_tp),
                     ("vllm_max_model_len", rl.seq_len),
                     ("sleep_level", 1 if rl.engine_sleep else 0),
                     ("offload_model", str(rl.trainer_offload).lower()),
                     ("offload_optimizer", str(rl.trainer_offload).lower())]
    env = f"NPROC_PER_NODE={wl.gpus_on_node}"
    if wl.nodes > 1:
        env += f" NNODES={wl.nodes}"
    # a list option (target_modules) is one shell word per item: ms-swift reads them with nargs
    body = " \\\n    ".join(f"--{k} " + (" ".join(shlex.quote(str(x)) for x in v) if isinstance(v, tuple)
                                            else shlex.quote(str(v))) for k, v in args)
    return f"{env} \\\nswift rlhf \\\n    {body}\n"


def parse_swift(text: str) -> ParsedRL:
    """Read an ms-swift ``swift rlhf`` command back (missing options take ms-swift's documented defaults)."""
    toks = _tokens(text)
    if "rlhf" not in toks or not any(t.endswith("swift") for t in toks):
        raise WorkloadError(_("not an ms-swift command (no `swift rlhf`)"))
    env: dict[str, str] = {}
    opts: dict[str, str] = {}
    i = 0
    while i < len(toks):
        t = toks[i]
        if "=" in t and t.split("=", 1)[0].isupper():
            k, v = t.split("=", 1)
            env[k] = v
        elif t.startswith("--"):
            k = t[2:]
            vals = []
            while i + 1 < len(toks) and not toks[i + 1].startswith("--"):
                vals.append(toks[i + 1])
                i += 1
            opts[k] = " ".join(vals) if vals else "true"
        i += 1
    g = opts.get
    algo = g("rlhf_type", "dpo")
    dpo = algo == "dpo"
    max_len = int(g("max_length")) if g("max_length") else None
    user: dict[str, RLValue] = {"algo": algo}
    if dpo:
        total = max_len or 2048
        user.update(prompt_len=total // 2, response_len=total - total // 2, num_generations=1, colocate=False,
                    engine_sleep=False)
    else:
        user.update(
            prompt_len=max_len,
            response_len=int(g("max_completion_length")) if g("max_completion_length") else None,
            num_generations=int(g("num_generations")) if g("num_generations") else None,
            rollout_util=float(g("vllm_gpu_memory_utilization")) if g("vllm_gpu_memory_utilization") else None,
            rollout_tp=int(g("vllm_tensor_parallel_size")) if g("vllm_tensor_parallel_size") else None,
            colocate=(g("vllm_mode", "colocate") == "colocate"),
            engine_sleep=int(g("sleep_level", "0")) > 0,
            trainer_offload=_truthy(g("offload_model", "false")) or _truthy(g("offload_optimizer", "false")),
        )
        gen_bs = g("generation_batch_size")
        if gen_bs and user["num_generations"]:
            user["rollout_batch"] = max(1, int(gen_bs) // user["num_generations"])
    beta = g("beta")
    user["ref"] = (float(beta) != 0.0) if beta is not None else None
    rl = RLConfig.for_framework("ms-swift", **user)
    if dpo and max_len:
        rl = rl.with_(prompt_len=max_len // 2, response_len=max_len - max_len // 2)
    ds = g("deepspeed", "")
    strategy = "zero3" if ds.startswith("zero3") else ("zero2" if ds.startswith("zero2") else "ddp")
    offload = "none"
    if ds.endswith("_offload"):
        offload = "all" if strategy == "zero3" else "optimizer"
    gpn = int(env.get("NPROC_PER_NODE", "1"))
    nodes = int(env.get("NNODES", "1"))
    tt = g("tuner_type", g("train_type", "lora"))
    if tt == "lora" and g("quant_bits") == "4":
        tt = "qlora"
    wl: dict[str, WorkloadValue] = {
        "method": tt if tt in ("full", "lora", "qlora") else "lora",
        "micro_batch": int(g("per_device_train_batch_size", "1")),
        "grad_accum": int(g("gradient_accumulation_steps", "1")),
        "grad_ckpt": _truthy(g("gradient_checkpointing", "true")),
        "loss": "fused" if _truthy(g("use_liger_kernel", "false")) else "standard",
        "gpus": gpn * nodes, "gpus_per_node": gpn, "strategy": strategy, "offload": offload,
        "seq_len": rl.seq_len,
    }
    if wl["method"] in ("lora", "qlora"):
        wl["lora_rank"] = int(g("lora_rank", "8"))
        wl["lora_alpha"] = int(g("lora_alpha", "32"))
        wl["lora_targets"] = tuple(g("target_modules", "all-linear").split())
    return ParsedRL(framework="ms-swift", model=g("model"), rl=rl, workload=wl)


def parse_rl_launch(text: str) -> ParsedRL:
    """Dispatch on the command: verl ``main_ppo`` or ms-swift ``swift rlhf``."""
    if "verl.trainer.main_ppo" in text:
        return parse_verl(text)
    if "rlhf" in text and "swift" in text:
        return parse_swift(text)
    raise WorkloadError(_("not an RL launch command trainfit reads"), fix=_("verl main_ppo or `swift rlhf` commands"))


WRITERS = {"verl": write_verl, "ms-swift": write_swift}
