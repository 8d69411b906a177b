"""Hugging Face Trainer integration: stop requests from ``trainfit watch``, complete-checkpoint markers, and
per-step metrics to JSONL and Prometheus.

Usage (any HF-Trainer based stack: plain Trainer, TRL, LLaMA-Factory, ms-swift)::

    from trainfit.integrations.hf import TrainfitCallback
    from trainfit.watch import resume_from

    trainer = Trainer(..., callbacks=[TrainfitCallback(metrics_path="metrics.jsonl", prometheus_port=9400)])
    trainer.train(resume_from_checkpoint=resume_from(args.output_dir))

Importing this module imports torch and transformers (the ``trace`` extra); ``prometheus_client`` (the
``watch`` extra) is imported only when ``prometheus_port`` is given, NVML (``nvidia-ml-py``) only when a
CUDA device is present.

How the numbers are measured (callbacks only, no wrapper around the model or the DataLoader):

* The Trainer fetches all micro-batches of an optimizer step *before* it calls ``on_step_begin``. So
  ``data_wait_seconds`` is the time from the last callback of the previous step (``on_step_end``, or
  ``on_log`` / ``on_save`` when those ran) to ``on_step_begin``; the first step of an epoch also pays for
  creating the DataLoader iterator (worker start-up) and, on resume, for skipping the batches already seen.
* ``compute_seconds`` is ``on_step_begin`` to ``on_step_end`` (with ``torch.cuda.synchronize()`` at the end
  when ``sync_cuda``, so queued kernels are counted in the step that launched them).
* ``step_seconds = data_wait_seconds + compute_seconds``; saving and logging are not in it (``save_seconds``).
* ``tokens`` is the Trainer's ``num_input_tokens_seen`` delta over the step (summed over ranks); the callback
  turns ``include_num_input_tokens_seen`` on ("all") unless ``tokens_per_step`` is given.
* ``loss``, ``grad_norm`` and ``learning_rate`` come from the Trainer's ``on_log`` of the same step, so use
  ``logging_steps=1`` to get them on every step (otherwise only on logged steps, as the Trainer averages).
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from transformers import TrainerCallback

from trainfit.i18n import _
from trainfit.json_types import JSONScalar
from trainfit.watch.checkpoint import mark_complete, mark_saving
from trainfit.watch.metrics import GIB, METRICS
from trainfit.watch.protocol import RESTART_EXIT_CODE, STOP_FILE_ENV, ack_path, write_json_atomic, RESUME_ENV

if TYPE_CHECKING:
    from prometheus_client import Gauge


def _dist():
    """torch.distributed when a process group is up with more than one rank, else None."""
    try:
        import torch.distributed as dist
    except ImportError:  # pragma: no cover
        return None
    if dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
        return dist
    return None


class _NVML:
    """GPU utilisation, power and memory of the current CUDA device through NVML (optional)."""

    def __init__(self) -> None:
        self.handle = None
        try:
            import pynvml  # provided by nvidia-ml-py

            pynvml.nvmlInit()
            self.nv = pynvml
            dev = torch.cuda.current_device()
            uuid = getattr(torch.cuda.get_device_properties(dev), "uuid", None)
            if uuid is not None:
                u = str(uuid)
                self.handle = pynvml.nvmlDeviceGetHandleByUUID(u if u.startswith("GPU-") else f"GPU-{u}")
            else:  # pragma: no cover - old torch
                visible = os.environ.get("CUDA_VISIBLE_DEVICES")
                idx = int(visible.split(",")[dev]) if visible and visible.split(",")[dev].isdecimal() else dev
                self.handle = pynvml.nvmlDeviceGetHandleByIndex(idx)
        except Exception:  # no pynvml, no driver, MIG, ...: leave the NVML fields out
            self.handle = None

    def sample(self) -> dict[str, float]:
        if self.handle is None:
            return {}
        out: dict[str, float] = {}
        try:
            out["gpu_util"] = self.nv.nvmlDeviceGetUtilizationRates(self.handle).gpu / 100.0
        except Exception:
            pass
        try:
            out["gpu_power_w"] = self.nv.nvmlDeviceGetPowerUsage(self.handle) / 1000.0
        except Exception:
            pass
        try:
            out["gpu_mem_gib"] = self.nv.nvmlDeviceGetMemoryInfo(self.handle).total / GIB
        except Exception:
            pass
        return out


def _checkpoint_weight_keys(cp: Path) -> set[str] | None:
    """Tensor names in the checkpoint's safetensors weights; None when it has none (adapters, DeepSpeed)."""
    single, index = cp / "model.safetensors", cp / "model.safetensors.index.json"
    if index.is_file():
        try:
            return set(json.loads(index.read_text())["weight_map"])
        except (OSError, ValueError, KeyError):
            return None
    if single.is_file():
        from safetensors import safe_open

        with safe_open(str(single), framework="pt") as f:
            return set(f.keys())
    return None


def repair_converted_resume(args, state, model) -> bool:
    """Reload the weights of a resumed run when the Trainer could not match the checkpoint's names.

    transformers 5 writes MoE checkpoints in the Hub layout (one tensor per expert) but its Trainer resumes
    with a plain ``load_state_dict`` into the fused runtime layout (``experts.gate_up_proj``), so every expert
    silently keeps its initial weights (a warning lists them as missing). Reported upstream as
    https://github.com/huggingface/transformers/issues/48805 (fix proposed in
    https://github.com/huggingface/transformers/pull/48822; both open as of 2026-12). When the resumed
    model has tensors the checkpoint does not name, load the checkpoint again through ``from_pretrained``
    (which applies the conversion) and copy it in place, so optimizer references stay valid. Returns True
    when it did. Not needed (and skipped) for PEFT adapters, DeepSpeed and FSDP checkpoints.
    """
    if model is None or state.global_step <= 0 or getattr(args, "deepspeed", None) or getattr(args, "fsdp", None):
        return False
    if hasattr(model, "peft_config"):
        return False

    env = os.environ.get(RESUME_ENV)
    cp = Path(env) if env else Path(args.output_dir) / f"checkpoint-{state.global_step}"
    keys = _checkpoint_weight_keys(cp)
    if keys is None:
        return False
    sd = model.state_dict()
    present_ptrs = {t.data_ptr() for k, t in sd.items() if k in keys}
    missing = [k for k, t in sd.items() if k not in keys and t.data_ptr() not in present_ptrs]  # tied: fine
    if not missing:
        return False
    dtype = next(model.parameters()).dtype
    loaded = type(model).from_pretrained(str(cp), dtype=dtype)
    model.load_state_dict(loaded.state_dict(), strict=True)
    del loaded
    print("trainfit: " + _("reloaded {checkpoint} with weight conversion ({n} tensors the Trainer could not match, "
                           "transformers#48805)").format(checkpoint=cp, n=len(missing)), file=sys.stderr)
    return True


class TrainfitCallback(TrainerCallback):
    """Stop on request (``trainfit watch``), mark complete checkpoints, write per-step metrics.

    Args:
        metrics_path: JSONL file, one record per optimizer step, appended to (a relaunch continues it;
            ``trainfit diagnose`` keeps the last record of a step that ran twice). Rank 0 writes it.
            None: no file.
        prometheus_port: serve the gauges on this port (each process on ``port + local_rank``; 0 picks a free
            port, see ``self.prometheus_port``). None: no endpoint.
        prometheus_addr: address to bind (default all interfaces, so the cluster's Prometheus can scrape).
        flops_per_token: training FLOPs per token (e.g. from ``trainfit plan``) for ``mfu``.
        peak_tflops_per_gpu: dense peak TFLOP/s of one GPU in the training precision, for ``mfu``.
        tokens_per_step: global tokens per optimizer step when known (packed fixed-length batches); None:
            count them with the Trainer's ``include_num_input_tokens_seen``.
        stop_file: stop-request path; default ``$TRAINFIT_STOP_FILE`` (set by ``trainfit watch``).
        exit_on_stop: after a stop, leave the process with exit code 143 at ``on_train_end``, so code after
            ``trainer.train()`` (a final save of a half-trained model) does not run.
        sync_cuda: ``torch.cuda.synchronize()`` at each step end for honest step times.
    """

    def __init__(self, metrics_path: str | os.PathLike | None = None, prometheus_port: int | None = None, *,
                 prometheus_addr: str = "0.0.0.0", flops_per_token: float | None = None,
                 peak_tflops_per_gpu: float | None = None, tokens_per_step: int | None = None,
                 stop_file: str | os.PathLike | None = None, exit_on_stop: bool = True,
                 sync_cuda: bool = True) -> None:
        if prometheus_port is not None and not 0 <= int(prometheus_port) <= 65535:
            raise ValueError(_("prometheus_port must be in 0..65535; got {port}").format(port=prometheus_port))
        for name, v in (("flops_per_token", flops_per_token), ("peak_tflops_per_gpu", peak_tflops_per_gpu),
                        ("tokens_per_step", tokens_per_step)):
            if v is not None and not v > 0:
                raise ValueError(_("{name} must be > 0; got {value}").format(name=name, value=v))
        self.metrics_path = Path(metrics_path) if metrics_path is not None else None
        self.requested_port = prometheus_port
        self.prometheus_addr = prometheus_addr
        self.prometheus_port: int | None = None
        self.flops_per_token = flops_per_token
        self.peak_tflops_per_gpu = peak_tflops_per_gpu
        self.tokens_per_step = tokens_per_step
        env_stop = os.environ.get(STOP_FILE_ENV)
        self.stop_file = str(stop_file) if stop_file is not None else (env_stop or None)
        self.exit_on_stop = exit_on_stop
        self.sync_cuda = sync_cuda
        self.repaired_resume = False
        """True when on_train_begin had to reload converted (MoE) weights, see repair_converted_resume."""
        self.stopped = False
        """True once a stop request was honoured (checkpoint saved, training stopped)."""
        self.records: deque[dict[str, JSONScalar]] = deque(maxlen=10_000)
        """The last 10,000 step records of this process (also on ranks that write no file)."""
        self._stopping = False
        self._file = None
        self._pending: dict[str, JSONScalar] | None = None
        self._mark = time.perf_counter()
        self._step_begin: float | None = None
        self._tokens_begin: int | None = None
        self._gauges: dict[str, Gauge] = {}
        self._server = None
        self._nvml: _NVML | None = None
        self._writer = False
        self._world_size = 1
        self._rank = 0

    # ------------------------------------------------------------------ setup / teardown
    def on_train_begin(self, args, state, control, **kwargs):
        self._world_size = max(1, int(getattr(args, "world_size", 1) or 1))
        self._rank = int(getattr(args, "process_index", 0) or 0)
        self._writer = bool(state.is_world_process_zero)
        if self.tokens_per_step is None and getattr(args, "include_num_input_tokens_seen", "no") in ("no", False):
            try:
                args.include_num_input_tokens_seen = "all"
            except Exception:  # pragma: no cover - immutable args in some wrapper
                pass
        if torch.cuda.is_available():
            self._nvml = _NVML()
        if self.metrics_path is not None and self._writer:
            self.metrics_path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.metrics_path, "a", encoding="utf-8")
            if self._file.tell() > 0:  # a killed launch may have cut its last line short: start a new one
                with open(self.metrics_path, "rb") as prev:
                    prev.seek(-1, os.SEEK_END)
                    if prev.read(1) != b"\n":
                        self._file.write("\n")
            self._write({"event": "start", "time_unix": time.time(), "world_size": self._world_size,
                         "start_step": state.global_step, "max_steps": state.max_steps,
                         "save_steps": getattr(args, "save_steps", None),
                         "max_grad_norm": getattr(args, "max_grad_norm", None),
                         "gradient_accumulation_steps": getattr(args, "gradient_accumulation_steps", None),
                         "flops_per_token": self.flops_per_token, "peak_tflops_per_gpu": self.peak_tflops_per_gpu,
                         "gpu_name": torch.cuda.get_device_name() if torch.cuda.is_available() else None})
        if self.requested_port is not None and self.prometheus_port is None:
            self._start_prometheus(int(getattr(args, "local_process_index", 0) or 0))
        self.repaired_resume = repair_converted_resume(args, state, kwargs.get("model"))
        self._mark = time.perf_counter()

    def _start_prometheus(self, local_rank: int) -> None:
        try:
            from prometheus_client import CollectorRegistry, Gauge, start_http_server
        except ImportError:
            from trainfit.errors import MissingExtraError

            raise MissingExtraError(_("the Prometheus endpoint needs prometheus_client"),
                                    fix="pip install 'trainfit[watch]'") from None
        registry = CollectorRegistry()
        for m in METRICS:
            if m.prom_name:
                self._gauges[m.key] = Gauge(m.prom_name, m.help, ["rank"], registry=registry)
        port = self.requested_port + local_rank if self.requested_port else 0
        server, _thread = start_http_server(port, addr=self.prometheus_addr, registry=registry)
        self._server = server
        self.prometheus_port = server.server_address[1]

    def close(self) -> None:
        """Close the JSONL file and stop the Prometheus endpoint."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    # ------------------------------------------------------------------ per step
    def on_step_begin(self, args, state, control, **kwargs):
        now = time.perf_counter()
        self._flush()
        self._data_wait = now - self._mark
        self._step_begin = now
        self._tokens_begin = int(getattr(state, "num_input_tokens_seen", 0) or 0)
        if torch.cuda.is_available():
            torch.cuda.reset_peak_memory_stats()

    def on_step_end(self, args, state, control, **kwargs):
        if self.sync_cuda and torch.cuda.is_available():
            torch.cuda.synchronize()
        now = time.perf_counter()
        begin = self._step_begin if self._step_begin is not None else now
        compute = now - begin
        wait = getattr(self, "_data_wait", 0.0)
        rec: dict[str, JSONScalar] = {"step": state.global_step, "time_unix": time.time(),
                               "step_seconds": wait + compute, "compute_seconds": compute,
                               "data_wait_seconds": wait}
        if self.tokens_per_step is not None:
            tokens = self.tokens_per_step
        else:
            seen = int(getattr(state, "num_input_tokens_seen", 0) or 0)
            tokens = seen - self._tokens_begin if self._tokens_begin is not None and seen else None
        if tokens:
            rec["tokens"] = tokens
            rec["tokens_per_s"] = tokens / rec["step_seconds"] if rec["step_seconds"] > 0 else None
            if self.flops_per_token and self.peak_tflops_per_gpu and rec["tokens_per_s"]:
                rec["mfu"] = rec["tokens_per_s"] * self.flops_per_token / (
                    self.peak_tflops_per_gpu * 1e12 * self._world_size)
        if torch.cuda.is_available():
            rec["mem_allocated_gib"] = torch.cuda.max_memory_allocated() / GIB
            rec["mem_reserved_gib"] = torch.cuda.max_memory_reserved() / GIB
            rec["gpu_mem_gib"] = torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory / GIB
            if self._nvml is not None:
                rec.update(self._nvml.sample())
        self._pending = rec
        if self._stop_requested():
            control.should_save = True
            control.should_training_stop = True
            self._stopping = True
        if control.should_save and self._writer:
            mark_saving(self._checkpoint_dir(args, state), step=state.global_step)
        self._mark = time.perf_counter()
        return control

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self._pending is not None and logs:
            for key in ("loss", "grad_norm", "learning_rate"):
                v = logs.get(key)
                if isinstance(v, (int, float)) or (hasattr(v, "item") and callable(v.item)):
                    self._pending[key] = float(v)
        self._mark = time.perf_counter()

    def on_save(self, args, state, control, **kwargs):
        now = time.perf_counter()
        if self._pending is not None and self._pending.get("step") == state.global_step:
            self._pending["save_seconds"] = now - self._mark
        dist = _dist()
        if dist is not None:
            dist.barrier()  # every rank has written its part of the checkpoint
        cp = self._checkpoint_dir(args, state)
        marker_writer = state.is_local_process_zero if getattr(args, "save_on_each_node", False) else self._writer
        if marker_writer:
            mark_complete(cp, step=state.global_step, world_size=self._world_size)
        if self._stopping:
            # every node's ``watch`` waits for an ack on its own (local) stop-file path, also on nodes that got
            # no notice (their ranks stopped through the all_reduce), so local rank 0 of each node writes one
            if state.is_local_process_zero and self.stop_file:
                write_json_atomic(ack_path(self.stop_file), {"step": state.global_step, "checkpoint": str(cp)})
            self.stopped = True
        self._mark = time.perf_counter()

    def on_train_end(self, args, state, control, **kwargs):
        self._flush()
        if self._file is not None:
            self._file.close()
            self._file = None
        if self.stopped and self.exit_on_stop:
            sys.stdout.flush()
            sys.stderr.flush()
            raise SystemExit(RESTART_EXIT_CODE)

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _checkpoint_dir(args, state) -> Path:
        return Path(args.output_dir) / f"checkpoint-{state.global_step}"

    def _stop_requested(self) -> bool:
        local = bool(self.stop_file) and os.path.exists(self.stop_file)
        dist = _dist()
        if dist is None:
            return local
        device = torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else "cpu"
        flag = torch.tensor([1 if local else 0], dtype=torch.int32, device=device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)  # all ranks stop at the same step, or none does
        return bool(flag.item())

    def _flush(self) -> None:
        rec, self._pending = self._pending, None
        if rec is None:
            return
        rec = {k: v for k, v in rec.items() if v is not None and not (isinstance(v, float) and math.isnan(v)
                                                                      and k != "loss")}
        self.records.append(rec)
        if self._gauges:
            for m in METRICS:
                v = rec.get(m.key)
                if m.key in self._gauges and isinstance(v, (int, float)):
                    self._gauges[m.key].labels(rank=str(self._rank)).set(float(v) * m.prom_scale)
        self._write(rec)

    def _write(self, rec: dict[str, JSONScalar]) -> None:
        if self._file is None:
            return
        self._file.write(json.dumps(rec, allow_nan=True) + "\n")
        self._file.flush()
