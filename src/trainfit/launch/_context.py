"""What every render target reads: one frozen :class:`RenderContext` built from a model, a workload, an
optional instance type and an optional plan summary (memory, speed, cost).

Nothing here imports torch, transformers or pandas, looks up the catalog or recomputes memory: the plan
carries every fact.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from trainfit import i18n, inputs
from trainfit.errors import TrainfitError
from trainfit.estimate.uncertainty import format_probability
from trainfit.i18n import N_, _, translate
from trainfit.json_types import JSONObject
from trainfit.launch._plan_notes import packing_line, save_steps
from trainfit.models import get_model
from trainfit.models.shapes import ModelShape
from trainfit.plan.parts import Placement
from trainfit.plan.types import Plan
from trainfit.providers.alibaba.lingjun import is_lingjun_name
from trainfit.rl.summary import RLSummary
from trainfit.workload import Workload


#: Where the checkpoint store (OSS, a PVC, a SkyPilot bucket) is mounted in every rendered job.
CKPT_MOUNT = "/mnt/checkpoints"
#: PAI's Qwen3 Megatron image (Pai-Megatron-Patch recipe; tag read in the DLC doc, see pai-facts 4).
PAI_IMAGE = "dsw-registry-vpc.{region}.cr.aliyuncs.com/pai/pai-megatron-patch:25.04"
PLACEHOLDER = "REPLACE_ME"
#: The dataset a job trains on when neither ``--dataset`` nor the plan's data names one (a public sample).
DEFAULT_DATASET = "AI-ModelScope/alpaca-gpt4-data-en"


def is_lingjun_placement(pl: Placement) -> bool:
    """A Lingjun (灵骏) job: the plan's resource class says so, or, when the plan carries no catalog record, the
    spec name has Lingjun's pattern."""
    return pl.resource_class == "pai-lingjun" or (pl.instance is None and is_lingjun_name(pl.instance_type))


def model_repo_id(model: ModelShape) -> str:
    """What the job files load: the Hugging Face / ModelScope id of a registry model (``Qwen/Qwen3-8B``) or of a
    config that names its repo (``_name_or_path``); for a ``--config`` folder outside the registry that folder's
    absolute path (a local model folder); else a ``REPLACE_ME`` placeholder that ``check`` lists. A bare
    ``Qwen/<folder name>`` would name a repo that does not exist."""
    from pathlib import Path

    name = model.name
    if "/" in name:
        return name
    try:
        get_model(name)
        return f"Qwen/{name}"
    except TrainfitError:
        pass

    src = Path(str(model.source or ""))
    folder = src.parent if src.name == "config.json" else src
    try:
        if str(model.source or "").strip() and folder.is_dir():
            # the gate every value passes before it reaches a job file (no spaces or shell characters)
            return inputs.as_ident("model", str(folder.resolve()), "dataset")
    except (OSError, TrainfitError):
        pass
    return f"{PLACEHOLDER}/{name}"


def slug(text: str, limit: int = 40) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return (s[:limit].rstrip("-")) or "job"


@dataclass(frozen=True, kw_only=True)
class RenderOptions:
    """Where and how the job runs, beyond the plan: every string here is checked by the input gate
    (:mod:`trainfit.inputs`) before it can reach a script or a job file."""

    region: str | None = None
    """Region id; default: the instance's only documented region, else cn-wulanchabu (Lingjun) / cn-hangzhou."""
    workspace_id: str | None = None
    resource_id: str | None = None
    """PAI resource quota id (empty = public resources)."""
    image: str | None = None
    dataset: str | None = None
    """Dataset id or path (default: a public sample dataset)."""
    job_name: str | None = None
    checkpoint_uri: str | None = None
    vpc: dict[str, str] | None = None
    learning_rate: float | None = None
    epochs: float | None = None
    """Epochs over the dataset; default: the plan's token budget decides the steps (``max_steps``)."""
    save_steps: int | None = None
    """Checkpoint interval in steps; default: the Young/Daly interval of the plan (spot: at the spot reclaim rate;
    on demand: at the on-demand interruption rate, ``plan/cost.py``), in steps of the plan's step time."""
    spot_discount_limit: float | None = None

    def __post_init__(self) -> None:
        for name, kind in (("region", "region"), ("workspace_id", "workspace_id"), ("resource_id", "resource_id"),
                           ("image", "image"), ("dataset", "dataset"), ("job_name", "job_name"),
                           ("checkpoint_uri", "uri")):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, inputs.as_ident(name, v, kind))
        if self.vpc is not None:
            object.__setattr__(self, "vpc", {k: inputs.as_ident(k, v, "vpc") for k, v in self.vpc.items()})
        if self.learning_rate is not None:
            object.__setattr__(self, "learning_rate", inputs.as_float("learning_rate", self.learning_rate,
                                                                      lo=0, hi=1, lo_open=True))
        if self.epochs is not None:
            object.__setattr__(self, "epochs", inputs.as_float("epochs", self.epochs, lo=0, hi=10_000, lo_open=True))
        if self.save_steps is not None:
            object.__setattr__(self, "save_steps", inputs.as_int("save_steps", self.save_steps, lo=1, hi=10**9))
        if self.spot_discount_limit is not None:
            object.__setattr__(self, "spot_discount_limit", inputs.as_float(
                "spot_discount_limit", self.spot_discount_limit, lo=0, hi=1, lo_open=True))


@dataclass(frozen=True, kw_only=True)
class RenderContext:
    """Everything a target needs: the typed plan and the render options. Built by
    :func:`trainfit.launch.build_context`; nothing here looks up the catalog or recomputes memory."""

    plan: Plan
    """The :class:`~trainfit.plan.types.Plan`."""
    model_id: str
    region: str
    image: str
    custom_image: bool = False
    dataset: str = DEFAULT_DATASET
    dataset_from_data: bool = False
    """True when ``dataset`` is the file the plan's data (``plan --dataset``) was counted from."""
    dataset_note: str | None = None
    """Why the job's dataset is not the plan's data file (a placeholder, or another ``--dataset``)."""
    job_name: str = "trainfit-job"
    checkpoint_uri: str = ""
    vpc: dict[str, str] | None = None
    workspace_id: str | None = None
    resource_id: str | None = None
    learning_rate: float | None = None
    epochs: float | None = None
    max_steps: int | None = None
    """Optimizer steps for the plan's token budget (tokens / (global batch x seq len)); None = use epochs."""
    save_steps: int = 200
    save_reason: str = ""
    """Why ``save_steps`` (the Young/Daly interval it came from, or ``--save-steps``)."""
    spot_discount_limit: float | None = None

    # ---- the plan's facts, for the targets
    @property
    def model(self) -> ModelShape:
        return self.plan.model

    @property
    def workload(self) -> Workload:
        return self.plan.workload

    @property
    def instance_type(self) -> str | None:
        return self.plan.placement.instance_type

    @property
    def gpu(self) -> str | None:
        return self.plan.placement.gpu

    @property
    def gpu_mem_gib(self) -> float | None:
        return self.plan.placement.gpu_mem_gib

    @property
    def gpus_per_instance(self) -> int | None:
        return getattr(self.plan.placement.instance, "gpu_count", None)

    @property
    def lingjun(self) -> bool:
        return is_lingjun_placement(self.plan.placement)

    @property
    def spot(self) -> bool:
        return self.plan.time_cost.spot

    @property
    def ckpt_dir(self) -> str:
        return f"{CKPT_MOUNT}/{self.job_name}"

    @property
    def nodes(self) -> int:
        return self.workload.nodes

    @property
    def gpus_per_node(self) -> int:
        return self.workload.gpus_on_node

    @property
    def megatron(self) -> bool:
        return self.workload.uses_megatron

    @property
    def lr(self) -> float:
        if self.learning_rate is not None:
            return self.learning_rate
        return 1e-5 if self.workload.method in ("full", "freeze") else 1e-4

    def summary_dict(self) -> JSONObject:
        """The plan's numbers as ``render --json`` reports them (memory, fit, speed, cost, steps)."""
        p = self.plan
        iv, sp, tc = p.intervals(), p.speed, p.time_cost
        return {"source": p.source, "verdict": p.fit.verdict, "intervals": iv,
                "oom_probability": p.fit.oom_probability, "out_of_domain": p.out_of_domain_note(),
                "memory": {"reserved_gib": p.memory.reserved_gib, "tensor_peak_gib": p.memory.tensor_peak_gib,
                           "peak_phase": p.memory.peak_phase, "gpu_mem_gib": p.placement.gpu_mem_gib,
                           "verdict": p.fit.verdict, "fits": p.fit.fits, "reasons": list(p.fit.reasons)},
                "steps": {"max_steps": self.max_steps, "save_steps": self.save_steps},
                "speed": None if sp.tokens_per_s is None else {"tokens_per_s": sp.tokens_per_s,
                                                               "step_seconds": sp.step_seconds, "mfu": sp.mfu},
                "cost": None if tc.hours is None else {"hours": tc.hours, "gpu_hours": tc.gpu_hours, "cost": tc.cost,
                                                       "currency": tc.currency, "tokens": tc.tokens}}

    def facts_line(self) -> str:
        """One machine-readable line that ``trainfit check`` reads back: the facts a file may not state itself
        (model, GPU, instance, layout) and the planned memory, as compact JSON."""
        import json

        p = self.plan
        pl = p.placement
        facts = {"model": p.model.name, "gpu": pl.gpu, "instance_type": pl.instance_type, "provider": pl.provider,
                 "resource_class": pl.resource_class, "region": self.region, "nodes": self.nodes,
                 "gpus_per_node": self.gpus_per_node, "reserved_gib": p.memory.reserved_gib,
                 "verdict": p.fit.verdict, "workload": p.workload.to_dict()}
        if pl.gpu_spec.mem_from_user:  # plan --gpu-mem: check sizes the GPU as the plan did
            facts["gpu_mem_gib_user"] = pl.gpu_spec.mem_gib
        if self.max_steps and p.rl is None:  # the step budget check reads back
            facts["budget"] = {"tokens": p.time_cost.tokens, "max_steps": self.max_steps}
            data = p.data
            if data is not None:  # steps count the data's rows (packed rows or samples), not tokens / seq_len
                facts["budget"].update({"rows_per_epoch": data.rows_per_epoch, "epochs": data.epochs,
                                        "packing": data.packing})
        rl = p.rl
        if rl is not None:  # RL plan: reserved_gib is the binding phase's peak
            facts["rl"] = {"algo": rl.config.algo, "rl_framework": rl.config.rl_framework,
                           "gpu_mem_gib": pl.gpu_mem_gib, "phases_gib": dict(rl.phases_gib),
                           "binding_phase": rl.binding_phase,
                           "kv_pool_gib": rl.kv_pool_gib, "max_concurrent_seqs": rl.max_concurrent_seqs,
                           "steps": rl.steps}
        return "trainfit-plan " + json.dumps(facts, separators=(",", ":"), ensure_ascii=True)

    def header_lines(self) -> list[str]:
        """The plan this file came from, one fact a line (no comment markers), in the current language (``render``
        prints them; the job files get :meth:`file_header_lines`)."""
        wl = self.workload
        lines = [
            _("rendered by trainfit from: {source}").format(source=translate(self.plan.source)),
            _("model {model}; method {method}; seq_len {seq_len}; packing {packing}; micro_batch {mb}; grad_accum {ga}; "
              "global_batch {gb}; gpus {gpus} ({nodes} node(s) x {gpn}); strategy {strategy}; offload {offload}; "
              "precision {precision}; tp {tp} pp {pp} ep {ep} cp {cp}").format(
                model=self.model_id, method=wl.method, seq_len=wl.seq_len, packing=_("on") if wl.packing else _("off"),
                mb=wl.micro_batch, ga=wl.grad_accum, gb=wl.global_batch, gpus=wl.gpus, nodes=self.nodes,
                gpn=self.gpus_per_node, strategy=wl.strategy, offload=wl.offload, precision=wl.precision, tp=wl.tp,
                pp=wl.pp, ep=wl.ep, cp=wl.cp),
            _("instance {it}; gpu {gpu}; {billing}; region {region}").format(
                it=self.instance_type or _("not set"), gpu=self.gpu or _("not set"),
                billing=_("spot") if self.spot else _("on-demand"), region=self.region),
        ]
        lines += self._figure_lines()
        rl = self.plan.rl
        lines += self._rl_lines(rl, wl)
        data = self.plan.data
        reason = self.save_reason_text()
        if rl is None and self.max_steps and data is not None:
            line = (_("budget: {steps} optimizer steps = {rows:,} packed rows x {epochs:g} epoch(s) / global batch "
                      "{gb}; checkpoint every {save} steps") if data.packing else
                    _("budget: {steps} optimizer steps = {rows:,} samples x {epochs:g} epoch(s) / global batch {gb}; "
                      "checkpoint every {save} steps")).format(
                steps=self.max_steps, rows=data.rows_per_epoch, epochs=data.epochs, gb=wl.global_batch,
                save=self.save_steps)
            lines.append(line + (f" ({reason})" if reason else ""))
        elif rl is None and self.max_steps:
            line = _("budget: {steps} optimizer steps = {tokens} tokens / (global batch {gb} x seq_len {seq_len}); "
                     "checkpoint every {save} steps").format(
                steps=self.max_steps, tokens=_num(self.plan.time_cost.tokens, 0), gb=wl.global_batch,
                seq_len=wl.seq_len, save=self.save_steps)
            lines.append(line + (f" ({reason})" if reason else ""))
        if rl is None and data is not None:
            line = _("dataset {dataset}: cut-off {cutoff} ({source}) truncates {share:.1%} of samples; {tokens:,} sample "
                     "tokens per epoch").format(dataset=self.dataset, cutoff=data.seq_len, source=data.seq_len_from,
                                                share=data.truncated_share, tokens=data.data_tokens_per_epoch)
            if data.packing and data.packing_efficiency is not None:
                line += _(" ({share:.1%} of packed rows filled)").format(share=data.packing_efficiency)
            lines.append(line)
        lines.append(self.facts_line())
        return lines

    def _figure_lines(self) -> list[str]:
        """The memory, speed and cost lines of :meth:`header_lines`, read from the plan."""
        lines: list[str] = []
        p = self.plan
        mem, sp, tc = p.memory, p.speed, p.time_cost
        iv = p.intervals()
        p_oom = p.fit.oom_probability
        verdict = p.fit.verdict
        shown = {"fits": _("fits"), "tight": _("TIGHT"), "oom": _("OOM"), "unknown": _("UNKNOWN")}.get(
            verdict, str(verdict).upper())
        line = _("memory: {reserved} GiB{range} per GPU reserved (tensor peak {peak} GiB, {phase}) of {usable} GiB "
                 "usable: {verdict}").format(
            reserved=_num(mem.reserved_gib), range=_rng(iv.get("per_gpu_gib")),
            peak=_num(mem.tensor_peak_gib), phase=mem.peak_phase, usable=_num(p.placement.gpu_mem_gib), verdict=shown)
        if p_oom is not None:
            line += ", P(OOM) {p}".format(p=format_probability(p_oom))
        lines.append(line)
        if sp.tokens_per_s is not None:
            lines.append(_("speed: {tps} tokens/s{tps_range}, {step} s/step{step_range}, MFU {mfu}{mfu_range}").format(
                tps=_num(sp.tokens_per_s, 0), tps_range=_rng(iv.get("tokens_per_s"), 0),
                step=_num(sp.step_seconds), step_range=_rng(iv.get("step_seconds")),
                mfu=_num(sp.mfu), mfu_range=_rng(iv.get("mfu"))))
        else:
            lines.append(_("speed: not estimated (no trainfit plan given)"))
        if tc.hours is not None and tc.cost is not None:
            lines.append(_("cost: {cost} {currency}{cost_range} for {hours} h{hours_range} ({gpu_hours} "
                           "GPU-hours{gpu_hours_range})").format(
                cost=_num(tc.cost), currency=tc.currency or "", cost_range=_rng(iv.get("cost"), 0),
                hours=_num(tc.hours), hours_range=_rng(iv.get("hours"), 1),
                gpu_hours=_num(tc.gpu_hours), gpu_hours_range=_rng(iv.get("gpu_hours"), 0)))
        elif tc.hours is not None:
            lines.append(_("cost: no price in the catalog; {hours} h{hours_range} ({gpu_hours} "
                           "GPU-hours{gpu_hours_range})").format(
                hours=_num(tc.hours), hours_range=_rng(iv.get("hours"), 1),
                gpu_hours=_num(tc.gpu_hours), gpu_hours_range=_rng(iv.get("gpu_hours"), 0)))
        else:
            lines.append(_("cost: not estimated (no trainfit plan given)"))
        note = p.out_of_domain_note()
        if note:
            lines.append(_("speed interval: {note}").format(note=note))
        return lines

    def _rl_lines(self, rl: RLSummary | None, wl: Workload) -> list[str]:
        """The RL line of :meth:`header_lines` (RL plans), else the packing line."""
        lines: list[str] = []
        if rl is not None:
            ph, c = rl.phases_gib, rl.config
            fw = c.rl_framework or _("trainfit defaults")
            if c.algo == "dpo":  # offline pairs: no rollout engine
                lines.append(_("rl: dpo ({framework}), prompt {prompt} + response {response}, {pairs} preference pairs "
                               "per step, {steps} steps; GiB per GPU: train {train}").format(
                    framework=fw, prompt=c.prompt_len, response=c.response_len, pairs=c.rollout_batch,
                    steps=rl.steps or "?", train=_num(ph.get("train"))))
            else:
                lines.append(_(
                    "rl: {algo} ({framework}), {engine} tp {tp} util {util:g}, prompt {prompt} + response {response}, "
                    "{generations} generations x {prompts} prompts per step, {steps} steps; GiB per GPU: rollout "
                    "{rollout}, train {train}, sync {sync} (binding: {binding}); KV pool {kv} GiB = {seqs} "
                    "sequences").format(
                    algo=c.algo, framework=fw, engine=c.rollout_engine, tp=c.rollout_tp,
                    util=c.rollout_util, prompt=c.prompt_len, response=c.response_len,
                    generations=c.num_generations, prompts=c.rollout_batch, steps=rl.steps or "?",
                    rollout=_num(ph.get("rollout")), train=_num(ph.get("train")), sync=_num(ph.get("sync")),
                    binding=rl.binding_phase, kv=_num(rl.kv_pool_gib), seqs=rl.max_concurrent_seqs))
        else:
            lines.append(packing_line(wl, megatron=self.megatron))
        return lines

    def file_header_lines(self) -> list[str]:
        """:meth:`header_lines` as the job files carry them: in English whatever the language of the run (a file's
        contents are what the tools read, and the same plan renders the same bytes)."""
        with i18n.language("en"):
            return self.header_lines()

    def save_reason_text(self) -> str:
        """Why ``save_steps``, in the current language (``save_reason`` was made in the language of the render)."""
        if not self.save_reason or self.save_reason == "--save-steps":
            return self.save_reason
        return save_steps(self.plan, self.plan.speed.step_seconds, self.max_steps)[1]

#: Where a plan came from (``Plan.source``, stored in English in plan files), shown in the language of the run.
PLAN_SOURCES = (N_("trainfit plan"), N_("trainfit render (no plan file)"))


def _rng(r: dict | None, nd: int = 2) -> str:
    """`` (p10-p90 a-b)``: the prediction interval of a figure (docs/accuracy.md), empty without one."""
    return f" (p10-p90 {_num(r['p10'], nd)}-{_num(r['p90'], nd)})" if r else ""


def _num(v: float | str | None, nd: int = 2) -> str:
    if v is None:
        return "?"
    if isinstance(v, (int, float)):
        return f"{v:,.{nd}f}" if nd else f"{v:,.0f}"
    return str(v)
