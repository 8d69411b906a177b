"""The traced training loop: build, wrap (LoRA / freeze / checkpointing / FSDP2), optimizer, steps."""

from __future__ import annotations

import contextlib
import time
import warnings
from types import ModuleType
from typing import TYPE_CHECKING, Callable, TypedDict

from trainfit import i18n
from trainfit.errors import MissingExtraError, NotTraceableError
from trainfit.i18n import _
from trainfit.models.shapes import ModelShape
from trainfit.trace.result import GIB, TraceResult
from trainfit.workload import ALL_LINEAR, Workload
import trainfit.trace.fsdp as fsdp
import trainfit.trace.hf_build as hf_build
import trainfit.trace.patches as patches
from trainfit.trace.hf_build import build_model, decoder_layers

if TYPE_CHECKING:
    from trainfit.trace.tracker import StorageTracker
    import torch

_FIX = "pip install 'trainfit[trace]'"


# ---------------------------------------------------------------------------------------------- checks
def check_traceable(shape: ModelShape, w: Workload) -> None:
    """Raise NotTraceableError (with the reason) for what the fake-tensor trace cannot run."""
    name = shape.name
    if w.method == "qlora":
        raise NotTraceableError(
            _("{name}: QLoRA is not traceable: its 4-bit NF4 base weights and matmuls are bitsandbytes CUDA "
              "kernels with no fake-tensor (meta) implementation").format(name=name),
            fix=_("use `trainfit memory` (analytic) or trace --method lora for the bf16-base equivalent"),
        )
    if w.optimizer in ("adamw-8bit", "paged-adamw-8bit"):
        raise NotTraceableError(
            _("{name}: {optimizer} is not traceable: bitsandbytes 8-bit optimizer kernels are CUDA-only and have "
              "no fake-tensor implementation").format(name=name, optimizer=w.optimizer),
            fix=_("use `trainfit memory`, or trace with --optimizer adamw-fused and subtract the state difference"),
        )
    if w.strategy in ("zero1", "zero2", "zero3"):
        raise NotTraceableError(
            _("{name}: DeepSpeed {strategy} is not traceable: its engine flattens parameters into CUDA buffers, "
              "needs a real NCCL/CUDA runtime and manages memory outside torch's dispatcher").format(
                name=name, strategy=w.strategy.upper()),
            fix=_("use `trainfit memory`, or trace --strategy fsdp (FSDP2 shards the same way as ZeRO-3)"),
        )
    if w.precision == "fp16":
        raise NotTraceableError(
            _("{name}: precision fp16 is not traced: fp16 mixed precision needs the CUDA GradScaler path (loss "
              "scaling, inf checks) of a GPU run; its tensor layout is that of amp-bf16 (fp32 params, grads and "
              "states, half-precision activations)").format(name=name),
            fix=_("trace --precision amp-bf16 for the same layout, or use `trainfit memory`"),
        )
    if w.precision == "fp8":
        raise NotTraceableError(
            _("{name}: precision fp8 is not traceable: fp8 matmuls need Transformer Engine / torchao CUDA kernels "
              "with no fake-tensor implementation").format(name=name),
            fix=_("use `trainfit memory`"),
        )
    if w.loss == "fused":
        raise NotTraceableError(
            _("{name}: the fused (Liger) linear cross-entropy is a Triton kernel with no fake-tensor version").format(
                name=name),
            fix=_("use `trainfit memory`, or trace --loss standard"),
        )
    if w.loss == "half":
        raise NotTraceableError(
            _("{name}: --loss half is not traceable: it is the loss of remote model code (Qwen v1's "
              "QWenLMHeadModel) over 16-bit logits, while the transformers models the trace builds upcast to "
              "fp32").format(name=name),
            fix=_("use `trainfit memory`, or trace --loss standard"),
        )
    if w.loss == "shift-copy":
        raise NotTraceableError(
            _("{name}: --loss shift-copy is the loss of transformers < 4.49; the trace runs the installed "
              "transformers, whose loss makes no shifted copy of the logits").format(name=name),
            fix=_("use `trainfit memory`, or trace --loss standard"),
        )
    for dim in ("tp", "pp", "ep", "cp"):
        if getattr(w, dim) > 1:
            raise NotTraceableError(
                _("{name}: {flag} {value} is not traceable: Megatron-style model parallelism is not part of the "
                  "transformers training step the trace runs").format(name=name, flag="--" + dim,
                                                                       value=getattr(w, dim)),
                fix=_("use `trainfit memory` for tensor/pipeline/expert/context parallel plans"),
            )
    if w.offload != "none":
        raise NotTraceableError(
            _("{name}: CPU offload ({offload}) is not traceable: it moves tensors between host and device, and the "
              "trace has a single (fake) device").format(name=name, offload=w.offload),
            fix=_("use `trainfit memory`"),
        )
    if w.strategy == "fsdp" and w.gpus < 2:
        pass  # FSDP on one rank is just the unsharded model (traced as such)


class _Probe(TypedDict):
    """The per-layer probe of the last step: on while its first micro-batch runs forward; live bytes at each
    decoder layer's entry (``pre``) and exit (``post``)."""

    on: bool
    pre: dict[int, int]
    post: dict[int, int]


def _require() -> tuple[ModuleType, ModuleType, ModuleType | None]:
    try:
        import torch
    except ImportError:
        raise MissingExtraError(_("trainfit trace needs torch"), fix=_FIX) from None
    try:
        import transformers
    except ImportError:
        raise MissingExtraError(_("trainfit trace needs transformers"), fix=_FIX) from None
    try:
        import peft
    except ImportError:
        peft = None
    return torch, transformers, peft


# ---------------------------------------------------------------------------------------------- loop
class _Progress:
    """Calls ``progress(desc, done, total)`` once per unit of work (1 build + 3 per step)."""

    def __init__(self, progress: Callable[[str, int, int], None] | None, steps: int) -> None:
        self.progress = progress
        self.total = 1 + steps * 3
        self.done = 0

    def tick(self, desc: str) -> None:
        if self.progress is not None:
            self.progress(desc, self.done, self.total)
        self.done += 1

    def finish(self) -> None:
        if self.progress is not None:
            self.progress(_("done"), self.total, self.total)


def _trace_notes(shape: ModelShape, w: Workload) -> tuple[str, list[str]]:
    """The attention implementation the trace runs and the notes on what it approximates."""
    notes: list[str] = []
    attn = w.attention
    if attn in ("flash", "flash3"):
        attn = "sdpa"
        notes.append(_("attention {attention} traced as sdpa: the CPU SDPA kernel "
                       "(_scaled_dot_product_flash_attention_for_cpu) saves out + logsumexp for backward, as "
                       "flash-attention does").format(attention=w.attention))
    if w.precision == "amp-bf16":
        notes.append(_("amp-bf16: fp32 params/grads/states, CPU autocast(bf16) around forward+loss; CPU and CUDA "
                       "autocast op lists differ slightly"))
    if w.method == "lora":
        notes.append(_("LoRA adapters are fp32 (PEFT autocast_adapter_dtype=True default), dropout 0"))
    if shape.arch == "next":
        notes.append(_("Gated DeltaNet layers traced with transformers' torch fallbacks (chunk_gated_delta_rule, "
                       "causal_conv1d); the fla / causal-conv1d CUDA kernels save different tensors"))
    if w.strategy in ("ddp",) and w.gpus > 1:
        notes.append(_("ddp: rank view without DDP gradient buckets (DDP adds ~1 bucket set, 25 MiB default)"))
    return attn, notes


def _quiet(stack: contextlib.ExitStack) -> None:
    """Silence library warnings and transformers logging, and apply the trace patches, until ``stack`` closes."""
    stack.enter_context(warnings.catch_warnings())
    warnings.simplefilter("ignore", FutureWarning)
    warnings.simplefilter("ignore", DeprecationWarning)
    warnings.filterwarnings("ignore", category=UserWarning)
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"peft\.")
    from transformers.utils import logging as tlog

    old_verbosity = tlog.get_verbosity()
    tlog.set_verbosity_error()
    stack.callback(tlog.set_verbosity, old_verbosity)
    stack.enter_context(patches.unpacked_sequences())
    stack.enter_context(patches.peft_fake_moves())


def _build_and_wrap(shape: ModelShape, w: Workload, peft: ModuleType | None, notes: list[str], *, dtype: torch.dtype,
                    attn: str, fake: bool, init_weights: bool) -> torch.nn.Module:
    """The model in train mode with the method (LoRA / freeze) and activation checkpointing applied."""
    model: torch.nn.Module = build_model(shape, dtype=dtype, attn_implementation=attn, init_weights=init_weights)
    if shape.is_moe:
        impl = getattr(model.config, "_experts_implementation", None)
        if impl == "eager" and fake:
            raise NotTraceableError(_("{name}: the eager MoE experts loop uses nonzero() (data-dependent)").format(
                name=shape.name))
        if impl:
            notes.append(_("MoE experts implementation: {impl}").format(impl=impl))
    model.train()
    model = _apply_method(model, shape, w, peft, notes)
    if w.grad_ckpt:
        m = model.get_base_model() if hasattr(model, "get_base_model") else model
        if hasattr(m, "activation_checkpointing_enable"):
            m.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
        else:  # pragma: no cover - older transformers
            m.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if w.method in ("lora", "freeze"):
            m.enable_input_require_grads()
    return model


def _track(stack: contextlib.ExitStack, model: torch.nn.Module, shape: ModelShape, w: Workload, trainable: list,
           sharded: bool, *, rounding: bool) -> tuple[StorageTracker, _Probe, list, int]:
    """Enter the storage tracker, register the weights, the per-layer probe hooks and the gradient hooks.

    ``sharded``: the model is FSDP-sharded (:mod:`trainfit.trace.fsdp`).
    Returns the tracker, the probe dict, the hook handles and the number of decoder layers."""
    from trainfit.trace.tracker import StorageTracker

    tokens = w.seq_len * w.micro_batch
    tracker = StorageTracker(vocab_size=shape.vocab_size, tokens=tokens, rounding=rounding)
    stack.enter_context(tracker)
    if sharded:
        stack.enter_context(fsdp.storage_resize_hooks(tracker))
    for p in model.parameters():
        tracker.track(p, "weights")
    for b in model.buffers():
        tracker.track(b, "weights")
    if sharded:
        fsdp.register_unsharded(model, tracker)

    layers = decoder_layers(model)
    probe: _Probe = {"on": False, "pre": {}, "post": {}}
    hooks = []
    for i, layer in enumerate(layers):
        hooks.append(layer.register_forward_pre_hook(_pre_hook(probe, tracker, i)))
        hooks.append(layer.register_forward_hook(_post_hook(probe, tracker, i)))
    for p in trainable:
        if hasattr(p, "register_post_accumulate_grad_hook") and not sharded:
            p.register_post_accumulate_grad_hook(lambda q: tracker.set_category(q.grad, "gradients"))
    return tracker, probe, hooks, len(layers)


def _run_steps(torch: ModuleType, model: torch.nn.Module, opt: torch.optim.Optimizer, trainable: list,
               tracker: StorageTracker, probe: _Probe, shape: ModelShape, w: Workload, sharded: bool, *,
               steps: int, tick: Callable[[str], None]) -> list[float]:
    """Run ``steps`` optimizer steps of ``w.grad_accum`` micro-batches each; the seconds of each step."""
    autocast = (lambda: torch.autocast(device_type="cpu", dtype=torch.bfloat16)) \
        if w.precision == "amp-bf16" else contextlib.nullcontext
    V = shape.vocab_size
    step_seconds: list[float] = []
    for step in range(steps):
        ts = time.perf_counter()
        tracker.phase = "forward"
        tracker.begin_step()
        last = step == steps - 1
        for micro in range(w.grad_accum):
            tracker.phase = "forward"
            if micro == 0:
                tick(_("step {n}/{total}: forward").format(n=step + 1, total=steps))
            probe["on"] = last and micro == 0
            ids = torch.randint(0, V, (w.micro_batch, w.seq_len))
            with autocast():
                loss = model(input_ids=ids, labels=ids).loss
                if w.grad_accum > 1:
                    loss = loss / w.grad_accum
            probe["on"] = False
            del ids
            tracker.mark("forward end")
            tracker.phase = "backward"
            if micro == 0:
                tick(_("step {n}/{total}: backward").format(n=step + 1, total=steps))
            loss.backward()
            del loss
            for p in trainable:
                if p.grad is not None:
                    tracker.set_category(p.grad, "gradients")
            tracker.mark("backward end")
        tracker.phase = "optimizer"
        tick(_("step {n}/{total}: optimizer").format(n=step + 1, total=steps))
        opt.step()
        for st in opt.state.values():
            for v in st.values():
                if isinstance(v, torch.Tensor):
                    tracker.set_category(v, "optimizer")
        opt.zero_grad(set_to_none=True)
        if sharded:
            fsdp.register_unsharded(model, tracker)
        tracker.mark("optimizer end")
        step_seconds.append(time.perf_counter() - ts)
    return step_seconds


def _result(shape: ModelShape, w: Workload, summary: dict, history: list, *, params: dict[str, int],
            elapsed: float, steps: int, step_seconds: list[float], per_layer: tuple[int, ...] | None,
            notes: list[str], fake: bool) -> TraceResult:
    return TraceResult(
        model=shape.name,
        workload=w.to_dict(),
        tensor_peak_gib=summary["peak"] / GIB,
        peak_bytes=int(summary["peak"]),
        peak_phase=summary["peak_phase"] if summary["peak_phase"] != "setup" else "forward",
        breakdown_gib={k: v / GIB for k, v in summary["breakdown"].items()},
        params=params,
        trace_seconds=elapsed,
        steps=steps,
        step_peaks_gib=tuple(h["peak"] / GIB for h in history),
        step_seconds=tuple(step_seconds),
        per_layer_activation_bytes=per_layer,
        versions=versions(),
        notes=tuple(notes),
        fake=fake,
    )


def run_trace(
    shape: ModelShape,
    w: Workload,
    *,
    steps: int = 2,
    progress: Callable[[str, int, int], None] | None = None,
    fake: bool = True,
    rounding: bool = True,
    init_weights: bool | None = None,
) -> TraceResult:
    """Build, wrap and run ``steps`` training steps under the storage tracker.

    ``fake=False`` runs the same code on real CPU tensors (for validation on tiny models).
    """
    check_traceable(shape, w)
    if steps < 1:
        raise NotTraceableError(_("steps must be >= 1"))
    if w.method == "lora":
        _torch, _tf, peft = _require()
        if peft is None:
            raise MissingExtraError(_("tracing LoRA needs peft"), fix=_FIX)
    torch, transformers, peft = _require()
    from torch._subclasses.fake_tensor import FakeTensorMode

    # imported here, not at the top (it imports torch, which `trainfit trace` checks for first with a clear
    # error), and before FakeTensorMode is entered
    import trainfit.trace.tracker  # noqa: F401

    prog = _Progress(progress, steps)
    attn, notes = _trace_notes(shape, w)
    dtype = torch.bfloat16 if w.precision == "bf16" else torch.float32
    t0 = time.perf_counter()
    prog.tick(_("building model"))

    stack = contextlib.ExitStack()
    sharded = w.strategy == "fsdp" and w.gpus > 1
    with stack:
        _quiet(stack)
        if sharded:
            stack.enter_context(fsdp.fake_process_group(w.gpus))
            notes.append(i18n.translate(fsdp.NOTE))
        mode = FakeTensorMode(allow_non_fake_inputs=False) if fake else None
        if mode is not None:
            stack.enter_context(mode)
        if init_weights is None:
            init_weights = not fake
        model = _build_and_wrap(shape, w, peft, notes, dtype=dtype, attn=attn, fake=fake, init_weights=init_weights)
        if sharded:
            fsdp.shard(model, w)
        trainable = [p for p in model.parameters() if p.requires_grad]
        if not trainable:
            raise NotTraceableError(_("{name}: no trainable parameters for method {method}").format(
                name=shape.name, method=w.method))
        opt = _optimizer(torch, transformers, trainable, w)
        params = _param_counts(model, shape)
        tracker, probe, hooks, n_layers = _track(stack, model, shape, w, trainable, sharded, rounding=rounding)
        step_seconds = _run_steps(torch, model, opt, trainable, tracker, probe, shape, w, sharded, steps=steps,
                                  tick=prog.tick)
        summary = tracker.step_summary()
        history = tracker.history + [summary]
        for h in hooks:
            h.remove()
        tracker.phase = "setup"
    elapsed = time.perf_counter() - t0
    prog.finish()
    return _result(shape, w, summary, history, params=params, elapsed=elapsed, steps=steps,
                   step_seconds=step_seconds, per_layer=_per_layer(probe, n_layers), notes=notes, fake=fake)


def versions() -> dict[str, str]:
    out = {}
    for mod in ("torch", "transformers", "peft"):
        try:
            out[mod] = __import__(mod).__version__
        except ImportError:
            out[mod] = "missing"
    return out


def _pre_hook(probe: _Probe, tracker: StorageTracker, i: int) -> Callable:
    def hook(mod: torch.nn.Module, args: tuple[torch.Tensor, ...]) -> None:
        if probe["on"] and tracker.phase == "forward":
            probe["pre"].setdefault(i, tracker.current)
    return hook


def _post_hook(probe: _Probe, tracker: StorageTracker, i: int) -> Callable:
    def hook(mod: torch.nn.Module, args: tuple[torch.Tensor, ...], out: torch.Tensor | tuple[torch.Tensor, ...]) -> None:
        if probe["on"] and tracker.phase == "forward":
            probe["post"].setdefault(i, tracker.current)
    return hook


def _per_layer(probe: _Probe, n: int) -> tuple[int, ...] | None:
    pre, post = probe["pre"], probe["post"]
    if n == 0 or len(pre) < n or (n - 1) not in post:
        return None
    vals = [pre[i + 1] - pre[i] for i in range(n - 1)] + [post[n - 1] - pre[n - 1]]
    return tuple(int(v) for v in vals)


def _apply_method(model: torch.nn.Module, shape: ModelShape, w: Workload, peft: ModuleType | None, notes: list[str]
                  ) -> torch.nn.Module:
    if w.method == "full":
        return model
    if w.method == "freeze":
        layers = decoder_layers(model)
        n = min(w.freeze_trainable_layers, len(layers))
        for p in model.parameters():
            p.requires_grad_(False)
        for layer in layers[len(layers) - n:]:
            for p in layer.parameters():
                p.requires_grad_(True)
        notes.append(_("freeze: only the last {n} decoder layers train (embeddings, norm, LM head frozen)").format(n=n))
        return model
    if w.method == "lora":
        targets: str | list[str] = "all-linear" if ALL_LINEAR in w.lora_targets else list(w.lora_targets)
        cfg = peft.LoraConfig(r=w.lora_rank, lora_alpha=w.lora_alpha, target_modules=targets, lora_dropout=0.0,
                              task_type="CAUSAL_LM")
        try:
            model = peft.get_peft_model(model, cfg)
        except Exception as e:  # noqa: BLE001 - PEFT raises many kinds under fake tensors
            raise NotTraceableError(_("{name}: PEFT could not wrap the model under fake tensors: {error}").format(
                name=shape.name, error=e)) from None
        if shape.is_moe and targets == "all-linear":
            notes.append(_("LoRA all-linear on MoE follows PEFT: every nn.Linear but the LM head (the router "
                           "included) plus the fused expert tensors through ParamWrapper"))
        return model
    raise NotTraceableError(_("method {method} is not traceable").format(method=w.method))  # pragma: no cover - checked earlier


def _optimizer(torch: ModuleType, transformers: ModuleType, params: list, w: Workload) -> torch.optim.Optimizer:
    lr = 1e-5
    if w.optimizer == "adamw-fused":
        return torch.optim.AdamW(params, lr=lr, fused=True)
    if w.optimizer == "adamw-foreach":
        return torch.optim.AdamW(params, lr=lr, foreach=True)
    if w.optimizer == "sgd":
        return torch.optim.SGD(params, lr=lr, foreach=True)
    if w.optimizer == "adafactor":
        from transformers.optimization import Adafactor

        return Adafactor(params, lr=lr, scale_parameter=False, relative_step=False)
    raise NotTraceableError(_("optimizer {optimizer} is not traceable").format(optimizer=w.optimizer))  # pragma: no cover


def _param_counts(model: torch.nn.Module, shape: ModelShape) -> dict[str, int]:
    total = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    inactive = shape.total_params - shape.active_params
    return {"total": int(total), "trainable": int(trainable), "active": int(total - inactive)}


