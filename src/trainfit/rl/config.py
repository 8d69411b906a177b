"""The RL request (:class:`RLConfig`) and the documented defaults of the RL frameworks.

An :class:`RLConfig` says how a GRPO / PPO / DPO job runs next to the training request (the
:class:`~trainfit.workload.Workload` of the policy update): which rollout engine, its tensor-parallel size
and memory fraction, prompt and response lengths, generations per prompt, prompts per step, whether the
engine shares the training GPUs (colocation), whether a reference model (and for PPO a critic) is loaded,
and what is released between phases (engine sleep, trainer offload).

:data:`FRAMEWORK_DEFAULTS` holds what each framework does when the user sets nothing, each value with the
public file or page it was read from. :meth:`RLConfig.for_framework` fills the fields the user did not set
from there. Unknown values stay ``None`` and fall back to trainfit's own defaults, which are the field
defaults of :class:`RLConfig` (documented as trainfit's choice, not a framework's).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Literal, TypeAlias

from trainfit.errors import WorkloadError
from trainfit.i18n import _

Algo = Literal["grpo", "ppo", "dpo"]
Engine = Literal["vllm", "sglang"]
Framework = Literal["verl", "openrlhf", "trl", "ms-swift", "chatlearn"]

ALGOS: tuple[str, ...] = ("grpo", "ppo", "dpo")
ENGINES: tuple[str, ...] = ("vllm", "sglang")
FRAMEWORKS: tuple[str, ...] = ("verl", "openrlhf", "trl", "ms-swift", "chatlearn")

#: vLLM / SGLang allocate the KV cache in pages of this many tokens (vLLM ``block_size`` default 16 on CUDA,
#: vllm/config/cache.py; SGLang pages are 1 token, so 16 is the conservative choice for both).
KV_BLOCK_TOKENS = 16


#: A value of an RL setting (an :class:`RLConfig` field): a name, a count, a fraction, a flag, or None (unset).
RLValue: TypeAlias = str | int | float | bool | None

@dataclass(frozen=True, kw_only=True)
class FrameworkDefaults:
    """What one RL framework does out of the box (None = not documented / not applicable)."""

    name: str
    rollout_util: float | None
    """Default ``gpu_memory_utilization`` (vLLM) / ``mem_fraction_static`` (SGLang) of the rollout engine."""
    rollout_tp: int | None
    """Default tensor-parallel size of the rollout engine."""
    num_generations: int | None
    """Default responses per prompt."""
    prompt_len: int | None
    response_len: int | None
    colocate: bool | None
    """Whether the engine shares the training GPUs by default."""
    engine_sleep: bool | None
    """Whether the engine releases its weights and KV cache while the trainer runs (vLLM sleep level 1 /
    free_cache_engine)."""
    trainer_offload: bool | None
    """Whether the trainer's parameters / optimizer states leave the GPU while the engine generates."""
    ref: bool | None
    """Whether a reference model is loaded by default (KL coefficient > 0)."""
    ref_offload: bool | None
    """Whether the reference model's weights sit in host RAM between its forward passes."""
    sources: tuple[str, ...]
    """Public files / pages the values were read from."""
    max_num_seqs: int | None = None
    """Engine ``max_num_seqs`` the framework passes (None = the engine's own default)."""
    strategy: str | None = None
    """The trainer's data-parallel strategy out of the box (trainfit's ``--strategy``: verl's actor ``fsdp``,
    OpenRLHF's ``--zero_stage 2`` = ``zero2``); None = not documented here (the Workload default, ``ddp``)."""
    offload: str | None = None
    """The trainer's offload out of the box (``none`` | ``optimizer`` | ``all``)."""
    grad_ckpt: bool | None = None
    """Gradient checkpointing of the policy out of the box."""
    as_of: str = "2026-12-03"
    notes: str = ""


FRAMEWORK_DEFAULTS: dict[str, FrameworkDefaults] = {
    "verl": FrameworkDefaults(
        name="verl", rollout_util=0.5, rollout_tp=2, num_generations=1, prompt_len=512, response_len=512,
        colocate=True, engine_sleep=True, trainer_offload=False, ref=True, ref_offload=False, max_num_seqs=256,
        strategy="fsdp", offload="none", grad_ckpt=True,
        sources=("https://github.com/volcengine/verl/blob/b178a3cd56f58b2d502255daba591e92833930a7/verl/trainer/"
                 "config/_generated_ppo_trainer.yaml",
                 "https://github.com/volcengine/verl/blob/b178a3cd56f58b2d502255daba591e92833930a7/verl/trainer/"
                 "config/rollout/rollout.yaml",
                 "https://github.com/volcengine/verl/blob/main/verl/trainer/config/ref/ref.yaml",
                 "https://verl.readthedocs.io/en/latest/examples/config.html"),
        as_of="2026-12-06",
        notes="verl commit b178a3c (2026-01-29), _generated_ppo_trainer.yaml (the flattened ppo_trainer.yaml): "
              "actor_rollout_ref.actor.strategy fsdp, actor fsdp_config param_offload/optimizer_offload false, "
              "actor_rollout_ref.model.enable_gradient_checkpointing true; rollout.gpu_memory_utilization 0.5, "
              "tensor_model_parallel_size 2, n 1, free_cache_engine true (engine sleeps during the update), "
              "max_num_seqs 256 (1024 before verl e9405d7, 2026-01-24), prompt/response 512; actor and reference "
              "run in the same hybrid-engine worker (colocated); ref param_offload false (the GRPO examples set it "
              "true); use_kl_loss examples load a reference.",
    ),
    "openrlhf": FrameworkDefaults(
        name="openrlhf", rollout_util=0.95, rollout_tp=1, num_generations=1, prompt_len=1024, response_len=1024,
        colocate=False, engine_sleep=False, trainer_offload=False, ref=True, ref_offload=False,
        strategy="zero2",
        sources=("https://github.com/OpenRLHF/OpenRLHF/blob/main/openrlhf/cli/train_ppo_ray.py",),
        notes="--vllm_gpu_memory_utilization 0.95, --vllm_tensor_parallel_size 1, --n_samples_per_prompt 1, "
              "--prompt_max_len 1024, --generate_max_len 1024; --colocate_all_models, --vllm_enable_sleep and "
              "--deepspeed_enable_sleep are off by default (separate GPUs per model); --init_kl_coef 0.01 loads "
              "a reference; --zero_stage 2.",
    ),
    "trl": FrameworkDefaults(
        name="trl", rollout_util=0.3, rollout_tp=1, num_generations=8, prompt_len=None, response_len=256,
        colocate=False, engine_sleep=False, trainer_offload=False, ref=False, ref_offload=False,
        sources=("https://github.com/huggingface/trl/blob/main/trl/trainer/grpo_config.py",
                 "https://huggingface.co/docs/trl/vllm_integration"),
        notes="GRPOConfig: vllm_mode 'server' (separate GPUs) unless 'colocate'; vllm_gpu_memory_utilization 0.3 "
              "(colocate only), vllm_tensor_parallel_size 1, vllm_enable_sleep_mode False, num_generations 8, "
              "max_completion_length 256, beta 0.0 (no reference model loaded).",
    ),
    "ms-swift": FrameworkDefaults(
        name="ms-swift", rollout_util=0.9, rollout_tp=1, num_generations=8, prompt_len=None, response_len=512,
        colocate=True, engine_sleep=False, trainer_offload=False, ref=True, ref_offload=False,
        sources=("https://github.com/modelscope/ms-swift/blob/main/docs/source_en/Instruction/"
                 "Command-line-parameters.md",
                 "https://github.com/modelscope/ms-swift/blob/main/docs/source_en/Instruction/GRPO/GetStarted/"
                 "GRPO.md"),
        notes="vllm_mode colocate parameters: vllm_gpu_memory_utilization 0.9, vllm_tensor_parallel_size 1, "
              "sleep_level 0 (no release), offload_model / offload_optimizer False; num_generations 8, "
              "max_completion_length 512, beta 0.04 (reference loaded; beta 0 drops it).",
    ),
    "chatlearn": FrameworkDefaults(
        name="chatlearn", rollout_util=0.85, rollout_tp=2, num_generations=8, prompt_len=None, response_len=1023,
        colocate=True, engine_sleep=True, trainer_offload=True, ref=True, ref_offload=True,
        sources=("https://github.com/alibaba/ChatLearn/blob/main/examples/fsdp/configs/grpo/"
                 "vllm_policy_inference.yaml",
                 "https://github.com/alibaba/ChatLearn/blob/main/examples/mcore/configs/grpo/grpo_qwen3.yaml"),
        notes="vllm_policy_inference.yaml: gpu_memory_utilization 0.85, tensor_model_parallel_size 2, "
              "num_inference_per_prompt 8, max_new_tokens 1023; grpo_qwen3.yaml colocates policy, "
              "policy_trainer and ref_policy with free_memory True for each (released between phases).",
    ),
}


@dataclass(frozen=True, kw_only=True)
class RLConfig:
    """One RL fine-tuning request (what happens around the policy update described by the Workload)."""

    algo: Algo = "grpo"
    """``grpo`` (group-relative, no critic), ``ppo`` (with a critic / value model), ``dpo`` (offline
    preference pairs: no rollout engine)."""
    rollout_engine: Engine = "vllm"
    rollout_tp: int = 1
    """Tensor-parallel size of each rollout engine instance."""
    rollout_util: float = 0.5
    """The engine's ``gpu_memory_utilization`` (vLLM) / ``mem_fraction_static`` (SGLang): the fraction of
    the GPU's memory the engine may fill with its weights, activations and KV cache."""
    prompt_len: int = 1024
    """Prompt tokens per sequence (maximum)."""
    response_len: int = 1024
    """Generated tokens per sequence (maximum)."""
    num_generations: int = 8
    """Responses sampled per prompt (GRPO group size; PPO usually 1)."""
    rollout_batch: int = 64
    """Prompts per RL step (sequences per step = rollout_batch * num_generations)."""
    colocate: bool = True
    """The engine shares the training GPUs (hybrid engine) instead of running on GPUs of its own."""
    ref: bool = True
    """A reference model is loaded for the KL term (False when beta = 0)."""
    critic: bool | None = None
    """A critic (value model) with its own training states; None = True for PPO, False otherwise."""
    engine_sleep: bool = True
    """The engine releases its weights (to host RAM) and its KV cache while the trainer runs (vLLM sleep
    level 1, verl free_cache_engine, ms-swift sleep_level 1)."""
    trainer_offload: bool = False
    """The trainer's parameters and optimizer states move to host RAM while the engine generates
    (ms-swift offload_model/offload_optimizer, verl param/optimizer offload, OpenRLHF deepspeed sleep)."""
    ref_offload: bool = False
    """The reference model's weights sit in host RAM except during its forward pass (verl
    ref.fsdp_config.param_offload)."""
    max_num_batched_tokens: int = 8192
    """Tokens per engine forward pass while profiling/prefilling (verl rollout.yaml default 8192)."""
    max_num_seqs: int = 256
    """Largest decode batch the engine schedules (vLLM ``max_num_seqs``; its sampler logits are profiled
    for this many sequences)."""
    sync_bucket_mb: int = 512
    """Parameter bucket gathered per weight-sync transfer (verl rollout.update_weights_bucket_megabytes 512)."""
    rl_framework: str | None = None
    """verl | openrlhf | trl | ms-swift | chatlearn (whose defaults filled the unset fields), or None."""

    def __post_init__(self) -> None:
        for name, allowed in (("algo", ALGOS), ("rollout_engine", ENGINES)):
            if getattr(self, name) not in allowed:
                raise WorkloadError(_("{name} must be one of {allowed}; got {value!r}").format(
                    name="--" + name.replace("_", "-"), allowed=", ".join(allowed), value=getattr(self, name)))
        if self.rl_framework is not None and self.rl_framework not in FRAMEWORKS:
            raise WorkloadError(_("{name} must be one of {allowed}; got {value!r}").format(
                name="--rl-framework", allowed=", ".join(FRAMEWORKS), value=self.rl_framework))
        for name in ("rollout_tp", "prompt_len", "response_len", "num_generations", "rollout_batch",
                     "max_num_batched_tokens", "max_num_seqs", "sync_bucket_mb"):
            v = getattr(self, name)
            if type(v) is not int or v < 1:
                raise WorkloadError(_("{name} must be an integer >= {low}; got {value!r}").format(
                    name="--" + name.replace("_", "-"), low=1, value=v))
        if not isinstance(self.rollout_util, (int, float)) or not 0.0 < float(self.rollout_util) <= 1.0:
            raise WorkloadError(_("--rollout-util must be in (0, 1]; got {value!r}").format(value=self.rollout_util),
                                fix=_("vLLM gpu_memory_utilization / SGLang mem_fraction_static, e.g. 0.5"))
        if self.algo == "grpo" and self.num_generations < 2:
            raise WorkloadError(
                _("GRPO needs at least 2 generations per prompt (group-relative advantage); got {n}").format(
                    n=self.num_generations),
                fix=_("pass --num-generations 8 (verl's rollout.n and OpenRLHF's n_samples_per_prompt default to 1)"))
        if self.critic and self.algo != "ppo":
            raise WorkloadError(_("--critic is a PPO option; --rl {algo} has no value model").format(algo=self.algo),
                                fix=_("drop --critic or use --rl ppo"))
        if self.prompt_len + self.response_len > 4_194_304:
            raise WorkloadError(_("prompt + response length is beyond any supported context"), fix=_("use <= 4M tokens"))

    # ------------------------------------------------------------------ derived
    @property
    def has_critic(self) -> bool:
        return self.algo == "ppo" if self.critic is None else bool(self.critic)

    @property
    def has_rollout(self) -> bool:
        """DPO trains on fixed preference pairs: no generation engine."""
        return self.algo != "dpo"

    @property
    def seq_len(self) -> int:
        """Tokens of one sequence (prompt + response)."""
        return self.prompt_len + self.response_len

    @property
    def seqs_per_step(self) -> int:
        return self.rollout_batch * (self.num_generations if self.algo != "dpo" else 2)

    def to_dict(self) -> dict[str, RLValue]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["critic"] = self.has_critic
        return d

    def with_(self, **changes: RLValue) -> "RLConfig":
        return replace(self, **changes)

    @classmethod
    def for_framework(cls, framework: str | None, **user: RLValue) -> "RLConfig":
        """An RLConfig whose unset fields (``user`` values that are None or absent) come from the documented
        defaults of ``framework``, then from RLConfig's own defaults."""
        kw: dict[str, RLValue] = {}
        if framework is not None:
            if framework not in FRAMEWORK_DEFAULTS:
                raise WorkloadError(_("{name} must be one of {allowed}; got {value!r}").format(
                    name="--rl-framework", allowed=", ".join(FRAMEWORKS), value=framework))
            fd = FRAMEWORK_DEFAULTS[framework]
            for name in ("rollout_util", "rollout_tp", "num_generations", "prompt_len", "response_len", "colocate",
                         "engine_sleep", "trainer_offload", "ref", "ref_offload", "max_num_seqs"):
                v = getattr(fd, name)
                if v is not None:
                    kw[name] = v
            kw["rl_framework"] = framework
        kw.update({k: v for k, v in user.items() if v is not None})
        return cls(**kw)


def trainer_defaults(framework: str | None) -> dict[str, str | bool]:
    """The policy update's Workload fields ``framework`` sets out of the box (verl: ``strategy`` fsdp, ``offload``
    none, ``grad_ckpt`` True), for the fields the user leaves unset; {} without a framework."""
    fd = FRAMEWORK_DEFAULTS.get(framework) if framework else None
    if fd is None:
        return {}
    return {k: getattr(fd, k) for k in ("strategy", "offload", "grad_ckpt") if getattr(fd, k) is not None}


RL_FIELD_NAMES = frozenset(f.name for f in fields(RLConfig))
DEFAULT_RL = RLConfig()

__all__ = ["ALGOS", "ENGINES", "FRAMEWORKS", "FRAMEWORK_DEFAULTS", "FrameworkDefaults", "KV_BLOCK_TOKENS",
           "RLConfig", "RLValue", "trainer_defaults"]
