"""Speed model: FLOPs per token from exact shapes, an efficiency table, and exposed communication.

Pure functions over :class:`ModelShape`, :class:`Workload` and a small :class:`Hardware` record (no I/O).
Formulas, conventions and sources: ``docs/speed-model.md``. In short:

* **FLOPs** (per token, ``S`` = ``seq_len``): forward matmuls ``2 x`` active matmul parameters of the
  decoder layers (routed experts: top-k of E) plus the LM head ``2*V*h`` (the embedding lookup is free);
  full-attention core ``2*S*nh*hd`` per layer (``QK^T`` and ``AV``, ``4*S*nh*hd``, halved for the causal
  mask: NVIDIA Megatron-Bridge / NeMo AutoModel convention ``6*N + 6*L*nh*hd*S`` for fwd+bwd); Gated
  DeltaNet layers a chunked linear-attention term independent of ``S``. Backward ``2x`` forward for
  trained weights; frozen matmuls only need input gradients (``1x``); layers below the trainable ones
  (``freeze``) need no backward; gradient checkpointing re-runs one forward of every layer that has a
  backward.
* **Time** per optimizer step = ``compute / (1 - bubble) + exposed communication + CPU optimizer``,
  ``compute`` from the engine model (``estimate/engines.py``: GEMMs, attention, element-wise traffic,
  kernel launches, MoE expert loop, optimizer step per engine family).
* **Communication**: ring collectives ``bytes * (n-1)/n / (link * link_efficiency)`` per pass; DP/ZeRO/
  FSDP volume per strategy, TP all-reduce per layer, EP all-to-all per MoE layer, CP KV exchange,
  pipeline point-to-point, CPU-offload PCIe traffic. A documented fraction of DP/CP/EP/offload traffic hides
  behind compute (never more than the compute time); TP and PP traffic is exposed, EP half-hidden.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainfit import i18n
from trainfit.errors import WorkloadError
from trainfit.i18n import N_, _
from trainfit.estimate.calibration import Calibrations
from trainfit.estimate.comm import (CP_OVERLAP, EP_OVERLAP, OVERLAP, QLORA_BYTES_PER_PARAM, TCP_FALLBACK_GBYTES_PER_S,
                                    CommTerm, comm_terms, hidden_seconds, links_for, pipeline_bubble_fraction,
                                    ring_seconds)
from trainfit.estimate.host_traffic import OFFLOAD_OVERLAP, QLORA_DEQUANT_BYTES_PER_PARAM, dequant_seconds, offload_term
from trainfit.estimate.flops import (GDN_CHUNK_SIZE, FlopsBreakdown, LayerFlops, _flops_cached,  # noqa: F401
                                     flops_per_token, full_attention_flops, linear_attention_flops)
from trainfit.estimate.hardware import (CPU_ADAM_PARAMS_PER_S_DEFAULT, LINK_EFFICIENCY_DEFAULT, PCIE_GBYTES_PER_S,
                                        GpuClass, Hardware, kernel_gaps)
from trainfit.estimate.params import count_params
from trainfit.models.shapes import ModelShape
from trainfit.workload import Workload, default_framework, routing_imbalance
from trainfit.estimate import engine_describe, engines

__all__ = [
    "CP_OVERLAP", "CPU_ADAM_PARAMS_PER_S_DEFAULT", "EP_OVERLAP", "GDN_CHUNK_SIZE", "LINK_EFFICIENCY_DEFAULT",
    "OFFLOAD_OVERLAP", "OVERLAP", "PCIE_GBYTES_PER_S", "QLORA_BYTES_PER_PARAM", "QLORA_DEQUANT_BYTES_PER_PARAM",
    "TCP_FALLBACK_GBYTES_PER_S", "CommTerm", "FlopsBreakdown", "GpuClass", "Hardware", "LayerFlops",
    "SpeedEstimate", "TrainingTime", "default_framework", "estimate_speed", "flops_per_token",
    "full_attention_flops", "linear_attention_flops", "pipeline_bubble_fraction", "ring_seconds", "training_time",
]
# ``_flops_cached`` (imported above) stays reachable as ``speed._flops_cached``: benchmarks/cli_speed.py clears it.


#: Engine families of the speed model (``--framework``); ``automodel`` is FSDP2 with TransformerEngine kernels.
FRAMEWORKS: tuple[str, ...] = ("hf-trainer", "deepspeed", "fsdp2", "megatron")


@dataclass(frozen=True, kw_only=True)
class SpeedEstimate:
    """Predicted training speed of one workload on one hardware."""

    tokens_per_s: float
    """All GPUs together."""
    tokens_per_s_per_gpu: float
    tokens_per_step: int
    step_seconds: float
    mfu: float
    """Model FLOPs (no recompute) / (GPUs * peak) - against the peak of the precision in use."""
    hfu: float
    """Executed FLOPs (with recompute) / (GPUs * peak)."""
    efficiency: float
    """Compute efficiency used (HFU while computing), from the table or the caller."""
    peak_tflops: float
    compute_seconds: float
    """GPU compute per step without bubbles or communication."""
    bubble_fraction: float
    bubble_seconds: float
    comm_seconds_total: float
    comm_seconds_exposed: float
    cpu_seconds: float
    """CPU optimizer step (offload), not overlapped."""
    dequant_seconds: float
    """QLoRA 4-bit dequantize memory traffic per step, with ``kbit_prepare`` also its fp32 activation casts
    (inside the pipelined compute)."""
    gpus: int
    model_flops_per_token: float
    hardware_flops_per_token: float
    framework: str
    comm: tuple[CommTerm, ...]
    flops: FlopsBreakdown
    assumptions: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    efficiency_sources: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class TrainingTime:
    """Wall-clock and GPU time to train on a number of tokens."""

    tokens: float
    steps: float
    hours: float
    gpu_hours: float


#: Engines whose context parallelism is PyTorch's ``context_parallel`` ring (torchtitan's FSDP2, accelerate/TRL under
#: the HF Trainer), not TransformerEngine's: :func:`estimate_speed` warns that its speed is an upper bound (the frozen
#: runs of docs/accuracy.md; no constant is fitted to them).
TORCH_RING_FRAMEWORKS: tuple[str, ...] = ("hf-trainer", "deepspeed", "fsdp2")


def _peak(wl: Workload, hw: Hardware, warnings: list[str]) -> tuple[str, float]:
    """(precision the matmuls run in, peak TFLOP/s of that precision); FP8 without FP8 cores falls back."""
    precision = wl.precision
    peak = hw.peak_tflops
    if precision == "fp8":
        if hw.peak_fp8_tflops:
            peak = hw.peak_fp8_tflops
        else:
            warnings.append(_("{gpu} has no FP8 tensor cores; FP8 is estimated at the 16-bit peak").format(gpu=hw.name))
            precision = "bf16"
    if precision in ("bf16", "amp-bf16") and not hw.supports_bf16:
        warnings.append(_("{gpu} has no bf16 tensor cores: bf16 matmuls fall back to slow paths; use fp16. "
                          "Estimated at the fp16 peak, which is optimistic").format(gpu=hw.name))
    return precision, peak


HF_EXPERTS_ASSUMPTION: dict[str, str] = {
    "modulelist": N_("Hugging Face MoE experts timed as transformers < 5 runs them (--experts-impl modulelist, the "
                     "default: one nn.Linear per expert in a Python loop, a host sync per expert; every published "
                     "HF-MoE run in benchmarks/data/throughput.yaml used it); transformers >= 5 defaults to "
                     "grouped_mm: pass --experts-impl grouped_mm (ms-swift: --experts_impl grouped_mm)"),
    "eager": N_("Hugging Face MoE experts timed as transformers >= 5 runs them eagerly (--experts-impl eager): a "
                "Python loop over stacked expert weights whose backward writes a full-size gradient per visited "
                "expert"),
    "grouped_mm": N_("Hugging Face MoE experts timed as transformers >= 5's grouped_mm (--experts-impl grouped_mm): "
                     "one torch._grouped_mm per projection, no per-expert loop; no published HF run with it is in the "
                     "calibration set (ms-swift's docs: its DeepSpeed MoE figures are transformers < 5 runs)"),
}
"""The assumption line for each ``Workload.experts_impl`` of Hugging Face MoE code (message ids: shown through
``i18n.translate``)."""


def _engine_compute(model: ModelShape, wl: Workload, hw: Hardware, fw: str, fl: FlopsBreakdown, *, precision: str,
                    peak: float, flops_per_gpu_step: float, compiled: bool, recompute_fraction: float,
                    constants: engines.EngineConstants | None, calibrations: Calibrations | None, warnings: list[str],
                    assumptions: list[str], moe_grouped_gemm: bool = True,
                    z3_leaf_moe: bool = True, triton_attention: bool = False,
                    ) -> tuple[float, float, tuple[str, ...], float]:
    """(compute seconds, executed-FLOPs efficiency, its sources, attention-kernel seconds) from the engine model
    of ``fw``'s kernels (``estimate/engines.py``), divided by a measured calibration when there is one."""
    ec = constants or engines.DEFAULT_CONSTANTS
    feat = engines.features(model, wl.with_(precision=precision), hw, fw, flops=fl, compiled=compiled,
                            trainable_params=float(count_params(model, wl).trainable),
                            recompute_fraction=recompute_fraction, moe_grouped_gemm=moe_grouped_gemm,
                            z3_leaf_moe=z3_leaf_moe, triton_attention=triton_attention)
    et = engines.compute_time(feat, ec)
    compute_s = et.seconds
    attention_s = et.attention_seconds
    if calibrations and constants is None:
        cal = calibrations.get((hw.name, feat.family))
        if cal is not None:
            compute_s /= cal.factor
            attention_s /= cal.factor
            assumptions.append(cal.line())
    eff = flops_per_gpu_step / (peak * 1e12 * compute_s)
    assumptions += engine_describe.describe(ec, feat.family)
    if model.is_moe and wl.ep > 1:
        imb = routing_imbalance(wl, model)
        if imb == 1.0:
            assumptions.append(_(
                "expert-parallel MoE timed with forced-balanced routing (--moe-routing balanced: every EP rank gets "
                "the mean token count, as Megatron's --moe-router-force-load-balancing)"))
        else:
            assumptions.append(_(
                "expert-parallel MoE timed with the busiest EP rank at {imb:g}x the mean routed tokens (--moe-routing "
                "{routing}): its expert GEMMs, permute traffic and all-to-all set the pace").format(
                    imb=imb, routing=wl.moe_routing)
                + (_(" (natural routing; from XTuner's capacity-factor sweep, workload.NATURAL_ROUTING_IMBALANCE)")
                   if wl.moe_routing == "natural" else ""))
    if feat.family == "hf" and model.is_moe:
        assumptions.append(i18n.translate(HF_EXPERTS_ASSUMPTION[wl.experts_impl]))
        if wl.strategy == "zero3":
            assumptions.append(
                _("DeepSpeed ZeRO-3 gathers each MoE block as one leaf module, as ms-swift >= 3.10 and LLaMA-Factory "
                  "set it (deepspeed.utils.set_z3_leaf_modules): one fetch per block and pass") if z3_leaf_moe else
                _("DeepSpeed ZeRO-3 fetches every expert linear on its own (no leaf module: ms-swift < 3.10), each an "
                  "exposed all-gather of zero3_fetch_seconds"))
    warnings.extend(feat.notes)
    if et.launch_bound:
        warnings.append(_("kernel-launch bound: the CPU issues kernels for {launch_s:.3g} s per step, longer than the "
                          "GPU needs ({gpu_s:.3g} s)").format(
            launch_s=et.launch_seconds, gpu_s=et.gemm_seconds + et.attention_seconds + et.elementwise_seconds))
    return compute_s, eff, engine_describe.constant_source_lines(), attention_s


def estimate_speed(model: ModelShape, workload: Workload, hardware: Hardware, *, framework: str | None = None,
                   efficiency: float | None = None, virtual_pp: int = 1, compiled: bool = False,
                   recompute_fraction: float = 0.0, constants: engines.EngineConstants | None = None,
                   calibrations: Calibrations | None = None, moe_grouped_gemm: bool = True,
                   expert_tp: int = 1, z3_leaf_moe: bool = True, triton_attention: bool = False,
                   kbit_prepare: bool = False) -> SpeedEstimate:
    """Tokens/s, step time and MFU of ``workload`` on ``hardware`` (see ``docs/speed-model.md``).

    ``framework`` picks the engine family (hf-trainer, deepspeed, fsdp2, megatron; default from the
    workload) whose kernels ``estimate/engines.py`` times. ``efficiency`` replaces the engine model by a
    fixed executed-FLOPs utilisation (0-1). ``virtual_pp``: interleaved pipeline stages per GPU (Megatron
    VP); ``compiled``: torch.compile; ``recompute_fraction``: selective recompute share of the forward (see
    ``engines.features``); ``constants``: :class:`engines.EngineConstants` (default: fitted);
    ``expert_tp``: Megatron's expert tensor parallel size (1, what trainfit's writers set; see
    ``comm.ep_term``); ``moe_grouped_gemm``: Megatron-Core's ``--moe-grouped-gemm`` (off: a per-expert loop,
    see ``engines.features``); ``z3_leaf_moe``: DeepSpeed ZeRO-3 gathers each Hugging Face MoE block as one leaf
    module (ms-swift >= 3.10 and LLaMA-Factory set it; off for older launchers: a fetch per expert linear);
    ``triton_attention``: the 2023 Triton FlashAttention kernel ran (llm-foundry's calibration rows; no
    --attention value selects it); ``kbit_prepare``: a QLoRA run whose trainer called PEFT's
    ``prepare_model_for_kbit_training`` (TRL SFTTrainer < 0.22 on one process; off for LLaMA-Factory, ms-swift and
    TRL >= 0.22): fp32 casts around every 4-bit linear (``host_traffic.kbit_cast_seconds``); ``calibrations``: the user's measured calibrations
    (:func:`trainfit.calibration_file.load_calibrations`, written by ``trainfit calibrate``): this GPU and engine
    family's divides the compute time (ignored when ``constants`` are given; None: uncalibrated).
    """
    wl, hw = workload, hardware
    for name, v in (("virtual_pp", virtual_pp), ("expert_tp", expert_tp)):
        if v < 1:
            raise WorkloadError(_("{name} must be >= 1, got {value}").format(name=name, value=v))
    fw = framework or default_framework(wl)
    if fw not in FRAMEWORKS and fw != "automodel":
        raise WorkloadError(_("unknown framework {framework!r}").format(framework=fw),
                            fix=_("use one of {values}").format(values=", ".join(FRAMEWORKS + ("automodel",))))
    warnings: list[str] = []
    assumptions: list[str] = []

    fl = flops_per_token(model, wl)
    if wl.gpus_per_node > hw.gpus_per_node:
        warnings.append(_("workload uses {gpn} GPUs per node but {gpu} nodes hold {hw_gpn}").format(
            gpn=wl.gpus_per_node, gpu=hw.name, hw_gpn=hw.gpus_per_node))
    tokens_per_step = wl.micro_batch * wl.seq_len * wl.grad_accum * wl.dp

    # ---- compute: peak, then the engine model or a fixed efficiency
    precision, peak = _peak(wl, hw, warnings)
    warnings.extend(kernel_gaps(wl.attention, hw.gpu_class, hw.name))
    if wl.cp > 1 and fw in TORCH_RING_FRAMEWORKS:
        warnings.append(_("context parallelism under {framework} runs PyTorch's own ring attention (an all-gather of "
                          "K/V, fp32 merging), which trainfit times like TransformerEngine's: published runs of it at "
                          "CP 2 to 8 (torchtitan, TRL with accelerate) ran 1.05-2.1x slower than this estimate "
                          "(docs/accuracy.md), so read the speed as an upper bound").format(framework=fw))
    eff_sources: tuple[str, ...] = ()
    flops_per_gpu_step = fl.hardware_flops * tokens_per_step / wl.gpus
    if efficiency is None:
        compute_s, eff, eff_sources, attention_s = _engine_compute(
            model, wl, hw, fw, fl, precision=precision, peak=peak, flops_per_gpu_step=flops_per_gpu_step,
            compiled=compiled, recompute_fraction=recompute_fraction, constants=constants,
            calibrations=calibrations, warnings=warnings, assumptions=assumptions,
            moe_grouped_gemm=moe_grouped_gemm, z3_leaf_moe=z3_leaf_moe, triton_attention=triton_attention)
    else:
        if not 0 < efficiency <= 1:
            raise WorkloadError(_("efficiency must be in (0, 1], got {efficiency}").format(efficiency=efficiency))
        eff = efficiency
        assumptions.append(_("compute efficiency {eff:.3f} given by the caller").format(eff=eff))
        compute_s = flops_per_gpu_step / (peak * 1e12 * eff)
        attention_s = compute_s * fl.forward_attention_flops / fl.forward_flops if fl.forward_flops else 0.0

    # ---- communication, CPU optimizer, QLoRA dequantize
    links = links_for(wl, hw, warnings)
    trainable = float(count_params(model, wl).trainable)
    terms = comm_terms(model, wl, fw, links, trainable, virtual_pp=virtual_pp, expert_tp=expert_tp)
    offload, cpu_s = offload_term(model, wl, hw, links, trainable, assumptions)
    if offload is not None:
        terms.append(offload)
    dequant_s = dequant_seconds(model, wl, hw, warnings, assumptions, kbit_prepare=kbit_prepare)

    return _assemble(model, wl, fl, fw, tokens_per_step=tokens_per_step, peak=peak, eff=eff,
                     eff_sources=eff_sources, compute_s=compute_s, attention_s=attention_s, dequant_s=dequant_s,
                     cpu_s=cpu_s, terms=terms,
                     virtual_pp=virtual_pp, link_eff=hw.link_efficiency, warnings=warnings,
                     assumptions=assumptions)


def _assemble(model: ModelShape, wl: Workload, fl: FlopsBreakdown, fw: str, *, tokens_per_step: int, peak: float,
              eff: float, eff_sources: tuple[str, ...], compute_s: float, dequant_s: float, cpu_s: float,
              attention_s: float,
              terms: list[CommTerm], virtual_pp: int, link_eff: float, warnings: list[str],
              assumptions: list[str]) -> SpeedEstimate:
    """Step time = ``(compute + dequantize) / (1 - bubble) + exposed communication + CPU optimizer``; hidden
    communication never exceeds the compute time."""
    m = wl.grad_accum
    gpus = wl.gpus
    bubble = pipeline_bubble_fraction(wl.pp, m * virtual_pp)  # interleaving divides the bubble by vp
    pipe_s = (compute_s + dequant_s) / (1 - bubble)
    bubble_s = pipe_s - compute_s - dequant_s
    comm_total = sum(t.seconds for t in terms)
    hidden = hidden_seconds(((t.seconds, t.overlap, t.attention_share, t.window) for t in terms), compute_s,
                            attention_s)
    exposed = comm_total - hidden
    step_s = pipe_s + exposed + cpu_s

    tps = tokens_per_step / step_s
    tps_gpu = tps / gpus
    mfu = fl.model_flops * tps_gpu / (peak * 1e12)
    hfu = fl.hardware_flops * tps_gpu / (peak * 1e12)

    assumptions += [
        _("attention FLOPs causal (2*S*nh*hd per layer forward), NVIDIA's 6*N + 6*L*nh*hd*S convention"),
        _("every sequence is seq_len tokens long (packed or padded), no document masking"),
        (_("ring collectives at {link_eff:.0%} of link bandwidth; FSDP per layer: the root's and first layer's "
           "all-gathers and the last reduce-scatters of each micro-batch exposed, the rest hidden up to the compute "
           "time").format(link_eff=link_eff)
         if any(t.name.endswith("-edge") for t in terms) else
         _("ring collectives at {link_eff:.0%} of link bandwidth; DP overlap {overlap:.0%} ({strategy}), hidden "
           "traffic <= compute time").format(link_eff=link_eff, overlap=OVERLAP[wl.strategy], strategy=wl.strategy)),
        (_("TP and PP traffic not overlapped, EP all-to-all {ep_overlap:.0%}, context-parallel KV ring only behind "
           "attention ({cp_hidden}/{cp} of its time)").format(ep_overlap=EP_OVERLAP, cp_hidden=wl.cp - 1, cp=wl.cp)
         if wl.cp > 1 else
         _("TP and PP traffic not overlapped, EP all-to-all {ep_overlap:.0%}").format(ep_overlap=EP_OVERLAP))
        + (_(", DeepSpeed-Ulysses all-to-alls (q, k, v, output per layer and pass) not overlapped")
           if wl.ulysses > 1 else ""),
    ]
    if model.n_linear_attention_layers:
        assumptions.append(_("Gated DeltaNet layers: chunked linear-attention FLOPs (chunk {chunk}), triangular "
                             "solve neglected").format(chunk=GDN_CHUNK_SIZE))
    return SpeedEstimate(
        tokens_per_s=tps, tokens_per_s_per_gpu=tps_gpu, tokens_per_step=tokens_per_step, step_seconds=step_s,
        mfu=mfu, hfu=hfu, efficiency=eff, peak_tflops=peak, compute_seconds=compute_s,
        bubble_fraction=bubble, bubble_seconds=bubble_s, comm_seconds_total=comm_total,
        comm_seconds_exposed=exposed, cpu_seconds=cpu_s, dequant_seconds=dequant_s, gpus=gpus,
        model_flops_per_token=fl.model_flops, hardware_flops_per_token=fl.hardware_flops, framework=fw,
        comm=tuple(terms), flops=fl, assumptions=tuple(assumptions), warnings=tuple(warnings),
        efficiency_sources=eff_sources,
    )


def training_time(speed: SpeedEstimate, tokens: float) -> TrainingTime:
    """Hours (wall clock) and GPU-hours to process ``tokens`` training tokens at ``speed``."""
    if tokens < 0:
        raise WorkloadError(_("tokens must be >= 0, got {tokens}").format(tokens=tokens))
    seconds = tokens / speed.tokens_per_s
    return TrainingTime(tokens=tokens, steps=tokens / speed.tokens_per_step, hours=seconds / 3600,
                        gpu_hours=seconds / 3600 * speed.gpus)
