"""Known OOM patterns of RL launch settings, as pure functions (``check`` hooks them in).

Each rule takes the model, the policy Workload, the RLConfig and the usable GPU memory and returns
:class:`Finding` records (same fields as ``trainfit.checks.rules.Violation``):

* ``rl-util-too-high``: colocated engine whose ``gpu_memory_utilization`` leaves less than the trainer's
  residual (weights, optimizer states, reference, critic, CUDA context) free; vLLM refuses to start or
  the trainer runs out of memory beside it;
* ``rl-colocate-no-sleep``: colocated engine that keeps its weights and KV cache while the trainer runs;
* ``rl-kv-pool``: the engine's KV pool holds no full prompt + response sequence;
* ``rl-unfused-logits``: fp32 logits of long responses materialised in full (no fused/chunked log-probs);
* ``rl-phase-oom``: a phase (rollout, train, sync) needs more than the GPU has;
* ``memory-fit``: otherwise the one fit verdict when it is not ``fits`` (tight, or host RAM unknown / short).

For ``check``: :func:`size_rl_launch` reads a command back and sizes it (the verdict of the one fit decision
over all phases); :func:`lint_rl_launch` returns the findings of the rules above for a command.
"""

from __future__ import annotations

from trainfit import i18n
from trainfit.i18n import N_, _
from trainfit.rules.types import Violation


from trainfit.models.shapes import ModelShape
from trainfit.rl.config import RLConfig
from trainfit.rl.memory import RLMemoryEstimate, estimate_rl_memory
from trainfit.workload import Workload
from trainfit.errors import WorkloadError
from trainfit.models import get_model
from trainfit.rl.launch import parse_rl_launch

#: Response length from which unfused logits are flagged (fp32 logits of one 8k-token sequence of a
#: 152k vocabulary are 4.6 GiB, and the standard loss keeps ~3 such buffers).
UNFUSED_LOGITS_MIN_RESPONSE = 8192


#: RL findings are the same records as every other check's (rule, severity, message, fix).
Finding = Violation

#: How the findings name the phases and verdicts (message ids; the keys stay the JSON codes).
_PHASE_LABELS = {"rollout": N_("rollout phase"), "train": N_("train phase"), "sync": N_("sync phase")}
#: ``memory-fit``'s message per verdict
_VERDICT_MESSAGES = {"fits": N_("fits: {reasons}"), "tight": N_("tight: {reasons}"), "oom": N_("oom: {reasons}"),
                     "unknown": N_("unknown: {reasons}")}


def phase_label(phase: str) -> str:
    """An RL phase (rollout, train, sync) as the findings name it, in the current language."""
    return i18n.translate(_PHASE_LABELS.get(phase, phase))


def rule_util_too_high(est: RLMemoryEstimate, rl: RLConfig) -> list[Finding]:
    if not (rl.has_rollout and rl.colocate) or rl.trainer_offload:
        return []
    budget = rl.rollout_util * est.gpu_mem_gib
    free = est.gpu_mem_gib - est.trainer_residual_gib
    if budget <= free:
        return []
    ok = max(0.0, free / est.gpu_mem_gib)
    return [Finding(rule="rl-util-too-high", severity="error",
                    message=_("rollout utilisation {util:g} asks for {budget:.1f} GiB but the trainer's residual "
                              "({resid:.1f} GiB: weights, optimizer states, reference, critic) leaves {free:.1f} GiB "
                              "of {gpu:g}").format(util=rl.rollout_util, budget=budget, resid=est.trainer_residual_gib,
                                                   free=free, gpu=est.gpu_mem_gib),
                    fix=_("lower the utilisation to <= {ok:.2f}, or offload the trainer during rollout (ms-swift "
                          "--offload_model/--offload_optimizer, verl actor fsdp_config "
                          "param/optimizer_offload)").format(ok=ok))]


def rule_colocate_no_sleep(est: RLMemoryEstimate, rl: RLConfig) -> list[Finding]:
    if not (rl.has_rollout and rl.colocate) or rl.engine_sleep:
        return []
    sev = "error" if est.phases_gib["train"] > est.gpu_mem_gib else "warning"
    return [Finding(rule="rl-colocate-no-sleep", severity=sev,
                    message=_("the colocated engine keeps its {engine:.1f} GiB (weights + KV cache) during the policy "
                              "update: train phase {train:.1f} GiB").format(engine=rl.rollout_util * est.gpu_mem_gib,
                                                                            train=est.phases_gib["train"]),
                    fix=_("let the engine sleep during training (ms-swift --sleep_level 1, verl "
                          "rollout.free_cache_engine=True, OpenRLHF --vllm_enable_sleep, TRL vllm_enable_sleep_mode)"))]


def rule_kv_pool(est: RLMemoryEstimate, rl: RLConfig) -> list[Finding]:
    if not rl.has_rollout or (est.max_concurrent_seqs or 0) >= 1:
        return []
    return [Finding(rule="rl-kv-pool", severity="error",
                    message=_("the engine's KV pool ({pool:.2f} GiB/GPU) holds no {seq_len}-token sequence "
                              "({seq:.2f} GiB)").format(pool=est.kv_pool_gib, seq_len=rl.seq_len,
                                                        seq=est.kv_gib_per_seq),
                    fix=_("raise the engine's gpu_memory_utilization or tensor-parallel size, or shorten the "
                          "prompt/response limits"))]


def rule_unfused_logits(est: RLMemoryEstimate, rl: RLConfig, wl: Workload) -> list[Finding]:
    if rl.algo == "dpo" or wl.loss != "standard" or rl.response_len < UNFUSED_LOGITS_MIN_RESPONSE:
        return []
    logits = est.train.breakdown_gib.get("logits_loss", 0.0) if hasattr(est.train, "breakdown_gib") else 0.0
    return [Finding(rule="rl-unfused-logits", severity="warning",
                    message=_("{n}-token responses with unfused log-probs: {gib:.1f} GiB of fp32 logits at the "
                              "policy-update peak").format(n=rl.response_len, gib=logits),
                    fix=_("use fused / chunked log-probs (verl actor_rollout_ref.model.use_fused_kernels=True, "
                          "ms-swift --use_liger_kernel true; trainfit --loss fused)"))]


def rule_phase_oom(est: RLMemoryEstimate) -> list[Finding]:
    over = [p for p, v in est.phases_gib.items() if v > est.gpu_mem_gib]
    if not over:
        return []
    return [Finding(rule="rl-phase-oom", severity="error",
                    message=_("; ").join(
                        _("{phase} needs {gib:.1f} GiB/GPU > {gpu:g}").format(
                            phase=i18n.translate(_PHASE_LABELS.get(p, p)), gib=est.phases_gib[p], gpu=est.gpu_mem_gib)
                        for p in over),
                    fix=_("trainfit memory --rl ... --gpu ... shows the terms of each phase"))]


def rule_verdict(est: RLMemoryEstimate) -> list[Finding]:
    """The one fit verdict when no phase is over the GPU (``rl-phase-oom`` says that): ``tight`` (inside the
    safety margin) and ``unknown`` / ``oom`` from the host RAM, as ``memory --rl``, ``plan --rl`` and ``render``
    report them."""
    host_oom = (est.fit or {}).get("host_verdict") == "oom"
    if (est.verdict not in ("tight", "unknown") and not host_oom) or any(
            v > est.gpu_mem_gib for v in est.phases_gib.values()):
        return []
    sev = "error" if host_oom else {"tight": "warning", "unknown": "info"}.get(est.verdict, "error")
    return [Finding(rule="memory-fit", severity=sev,
                    message=i18n.translate(_VERDICT_MESSAGES.get(est.verdict, est.verdict + ": {reasons}")).format(
                        reasons=_("; ").join((est.fit or {}).get("reasons") or ())),
                    fix=_("check the node's host RAM before renting") if est.verdict == "unknown" or host_oom
                    else _("leave room: a lower rollout utilisation, a smaller micro-batch or more GPUs"))]


def lint_rl(model: ModelShape | None, wl: Workload, rl: RLConfig, gpu_mem_gib: float, *,
            host_ram_gib: float | None = None, estimate: RLMemoryEstimate | None = None) -> list[Finding]:
    """All RL rules over one configuration (errors first). ``estimate``: the configuration's
    :func:`estimate_rl_memory` when the caller has it already."""
    est = estimate or estimate_rl_memory(model, wl, rl, gpu_mem_gib, strict=False, host_ram_gib=host_ram_gib)
    return _rules(est, rl, wl)


def _rules(est: RLMemoryEstimate, rl: RLConfig, wl: Workload) -> list[Finding]:
    out = (rule_util_too_high(est, rl) + rule_colocate_no_sleep(est, rl) + rule_kv_pool(est, rl)
           + rule_unfused_logits(est, rl, wl) + rule_phase_oom(est) + rule_verdict(est))
    return sorted(out, key=lambda f: f.severity != "error")


def size_rl_launch(text: str, gpu_mem_gib: float, *, model: str | ModelShape | None = None,
                   host_ram_gib: float | None = None, margin: float | None = None) -> tuple[object, RLMemoryEstimate]:
    """Read a verl / ms-swift command back and size it with the same model as ``memory --rl`` / ``plan --rl``:
    ``(ParsedRL, RLMemoryEstimate)``; the estimate's ``verdict`` is the one fit decision over all phases.
    ``model``: a registry name or ModelShape that overrides the command's model path (e.g. the ``model`` of a
    rendered file's ``trainfit-plan`` line when the command points at a local folder)."""
    parsed = parse_rl_launch(text)
    if model is None:
        if not parsed.model:
            raise WorkloadError(_("the command names no model"), fix=_("set actor_rollout_ref.model.path / --model"))
        model = parsed.model
    shape = get_model(model) if isinstance(model, str) else model
    est = estimate_rl_memory(shape, parsed.workload_obj(), parsed.rl, gpu_mem_gib, strict=False,
                             host_ram_gib=host_ram_gib, margin=margin)
    return parsed, est


def lint_rl_launch(text: str, gpu_mem_gib: float, *, model: str | ModelShape | None = None,
                   host_ram_gib: float | None = None) -> tuple[list[Finding], object]:
    """Read a verl / ms-swift command, resolve its model from the registry (or ``model``), and lint it. Returns
    the findings and the :class:`~trainfit.rl.launch.ParsedRL`."""
    parsed, est = size_rl_launch(text, gpu_mem_gib, model=model, host_ram_gib=host_ram_gib)
    return _rules(est, parsed.rl, parsed.workload_obj()), parsed
