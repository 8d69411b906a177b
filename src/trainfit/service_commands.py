"""One dispatcher per command, shared by the CLI and the web API: each takes the parsed option values of a
``memory``, ``plan`` or ``render`` request, decides whether it is an RL request or supervised fine-tuning, and calls
the service (:mod:`trainfit.service`). ``trainfit._cli`` and the web adapters (:mod:`trainfit.service_web`) only
parse (argparse; a JSON body through the option table) and present what these return.

The model is passed as a function (``model()``): each front end resolves it where its errors have always come (the
CLI after the RL options are checked, the web before).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Mapping

from trainfit import inputs
from trainfit.dataset import is_stats_file
from trainfit.dataset.budget import DataBudget, budget_from_values
from trainfit.errors import InputError, WorkloadError
from trainfit.i18n import _
from trainfit.models import ModelShape
from trainfit.options import (RL_OPTION_NAMES, RL_OPTIONS, OptionValue, parse_options, plan_request_from_values,
                              rl_config_from_values, rl_workload_from_values, workload_from_values)
from trainfit.plan.batch import with_target_batch
from trainfit.plan.types import Plan, PlanResult
from trainfit.service import (MEMORY_EXTRA, MemoryReport, RLMemoryReport, make_plan, memory_report, plan_for,
                              resolve_model, rl_memory_report, single_target)


def memory_command(model: Callable[[], ModelShape], values: Mapping[str, OptionValue], *, gpu: str | None = None,
                   gpu_mem_gib: float | None = None, host_ram_gib: float | None = None,
                   instance_type: str | None = None) -> MemoryReport | RLMemoryReport:
    """``memory``: with ``rl`` set the per-phase :class:`RLMemoryReport` (RL options of
    :data:`trainfit.options.RL_OPTIONS`), else the :class:`MemoryReport`, sized at the data's longest row with
    ``dataset`` (the CLI's ``--dataset``)."""
    rl = rl_config_from_values(values)
    if rl is not None and values.get("dataset"):
        raise WorkloadError(_("--dataset sizes supervised fine-tuning rows; RL sequences are --prompt-len + "
                              "--response-len"), fix=_("drop --dataset, or drop --rl"))
    if rl is not None:  # RL sizing (issue 13): memory per phase
        steps = values.get("steps")
        return rl_memory_report(model(), rl_workload_from_values(values, rl), rl, gpu=gpu, gpu_mem_gib=gpu_mem_gib,
                                host_ram_gib=host_ram_gib, instance_type=instance_type,
                                steps=steps if isinstance(steps, int) else None)
    data = budget_from_values(values)
    return memory_report(model(), workload_from_values(values), gpu=gpu, gpu_mem_gib=gpu_mem_gib,
                         host_ram_gib=host_ram_gib, instance_type=instance_type, data=data)


def memory_from_options(values: Mapping[str, object]) -> MemoryReport | RLMemoryReport:
    """``memory`` from a mapping of option values (the web API body; the CLI parses flags the same way). With
    ``rl`` set (and the RL options of :data:`trainfit.options.RL_OPTIONS`) the :class:`RLMemoryReport`."""
    wl_vals = parse_options(values, allowed_extra=MEMORY_EXTRA + RL_OPTION_NAMES, defaults=False)
    rl_vals = parse_options({k: v for k, v in values.items() if k in RL_OPTION_NAMES}, RL_OPTIONS)
    model = resolve_model(values.get("model"), config=values.get("config"))  # type: ignore[arg-type]
    gpu = values.get("gpu")
    gm = values.get("gpu_mem")
    hr = values.get("host_ram")
    it = values.get("instance_type")
    return memory_command(
        lambda: model, {**wl_vals, **rl_vals}, gpu=None if gpu is None else inputs.as_ident("gpu", gpu, "gpu"),
        gpu_mem_gib=None if gm is None else inputs.as_float("gpu_mem", gm, lo=0, hi=4096, lo_open=True),
        host_ram_gib=None if hr is None else inputs.as_float("host_ram", hr, lo=0, hi=1e6, lo_open=True),
        instance_type=None if it is None else inputs.as_ident("instance_type", it, "instance_type"))


def plan_command(model: ModelShape, values: Mapping[str, OptionValue]) -> PlanResult:
    """``plan``: the request of the option values (with ``rl`` set, an RL plan ranked by the hours and cost of
    ``steps``: :func:`trainfit.options.plan_request_from_values` decides), searched and ranked."""
    return make_plan(plan_request_from_values(model, values))


@dataclass(frozen=True)
class Where:
    """Where ``render`` without a plan file puts the job: a GPU or an instance type, the training tokens (sets the
    steps and the time) and spot."""

    gpu: str | None = None
    instance_type: str | None = None
    tokens: float | None = None
    spot: bool = False


def plan_to_render(model: Callable[[], ModelShape], values: Mapping[str, OptionValue], where: Callable[[], Where], *,
                   region: str | None, target: str | None) -> Plan:
    """The plan ``render MODEL ...`` (no plan file) renders: with ``rl`` set the RL plan of ``steps``; else the
    supervised plan, with the data budget of a counted ``dataset`` (:func:`data_budget`) and the global batch the
    planner would aim at when ``grad_accum`` is not given. ``where()`` is read once the workload is valid."""
    rl = rl_config_from_values(values)
    data = data_budget(values) if rl is None else None
    if rl is not None:
        wl = rl_workload_from_values(values, rl)
    else:
        wl = workload_from_values(values if data is None else {**values, "seq_len": data.seq_len})
    at = where()
    tokens = at.tokens if data is None else data.tokens
    if rl is None and values.get("grad_accum") is None:  # the global batch the planner would aim at
        wl = with_target_batch(wl, tokens)
    steps = values.get("steps")
    plan = plan_for(model(), wl, gpu=at.gpu, instance_type=at.instance_type, tokens=tokens, spot=at.spot,
                    region=region, rl=rl, steps=steps if rl is not None and isinstance(steps, int) else None,
                    target=None if rl is not None else single_target(target))
    return plan if data is None else replace(plan, data=data)


def data_budget(values: Mapping[str, OptionValue]) -> DataBudget | None:
    """``render MODEL --dataset STATS|FILE [--tokenizer DIR]``: the data budget ``plan --dataset`` computes (the same
    function), when ``dataset`` is a stats file or a dataset counted with ``tokenizer``; None when it is a dataset
    id (or a path) that the job only names."""
    dataset, tokenizer = values.get("dataset"), values.get("tokenizer")
    if not isinstance(dataset, str) or not dataset or not (tokenizer or is_stats_file(dataset)):
        if tokenizer or values.get("seq_len_percentile"):
            raise InputError(_("--tokenizer and --seq-len-percentile count a dataset: they need --dataset FILE"),
                             fix=_("pass --dataset train.jsonl --tokenizer DIR (or --dataset stats.json)"))
        return None
    return budget_from_values({k: values.get(k) for k in ("dataset", "tokenizer", "seq_len", "seq_len_percentile",
                                                           "packing", "epochs", "tokens")})
