"""``llamafactory.yaml``: the same run as a LLaMA-Factory ``llamafactory-cli train`` config.

Resume: LLaMA-Factory resumes by itself from the newest ``checkpoint-N`` in ``output_dir`` when
``resume_from_checkpoint`` is unset and ``overwrite_output_dir`` is false (``hparams/parser.py``); the
output directory is on the checkpoint mount, so a restarted spot job continues. Pass
``resume_from_checkpoint=PATH`` on the command line to pick a checkpoint by hand.
"""

from __future__ import annotations

import json
from typing import Any

from trainfit.i18n import _
from trainfit.launch._common import (OPTIMIZERS, dump_yaml, hash_header, lora_dropout_note, optimizer_read, sft_only,
                                     model_kernels)
from trainfit.launch._context import PLACEHOLDER, RenderContext
from trainfit.launch.deepspeed import render as render_ds_config
from trainfit.target_layouts import LF_PRECISION, llamafactory_layout_reason

FILES = ("llamafactory.yaml", "dataset_info.json")
#: The name render gives the plan's data file in ``dataset_info.json``.
DATA_NAME = "trainfit_data"
DS_PATH = "ds_config.json"
LF_ATTN = {"flash": "fa2", "flash3": "fa3", "sdpa": "sdpa", "eager": "disabled"}


def applies(ctx: RenderContext) -> str | None:
    if (why := sft_only(ctx)):  # an RL plan renders with the verl / swift_grpo targets
        return why
    return llamafactory_layout_reason(ctx.workload)


def dataset_entry(ctx: RenderContext) -> tuple[dict[str, Any] | None, str | None]:
    """(the ``dataset_info.json`` entry that describes the plan's data file to LLaMA-Factory, None and why not).

    LLaMA-Factory names datasets in ``dataset_info.json`` (``file_name``, ``formatting`` alpaca or sharegpt,
    ``columns``, ``tags``; https://github.com/hiyouga/LLaMA-Factory/blob/main/data/README.md). ms-swift's messages
    format is LLaMA-Factory's sharegpt with OpenAI tags (role/content, user/assistant/system). Optional columns
    (system, history, input) are named only when the rows have them; a column named ``null`` is not read."""
    data = ctx.plan.data
    if data is None or not ctx.dataset_from_data:
        return None, _("the job's dataset is not the plan's data file")
    fmt = data.data_format
    if fmt is None:
        return None, _("the stats do not say one format for every row (mixed formats, or a stats file written "
                       "before formats were recorded: run `trainfit data` again)")
    col = lambda k: data.columns.get(k, k)  # noqa: E731
    has = lambda k: col(k) in data.keys  # noqa: E731
    entry: dict[str, Any] = {"file_name": ctx.dataset}
    if fmt in ("messages", "sharegpt"):
        cols = {"messages": col("messages" if fmt == "messages" else "conversations")}
        if has("system"):
            cols["system"] = col("system")
        entry.update({"formatting": "sharegpt", "columns": cols})
        if fmt == "messages":
            entry["tags"] = {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                             "assistant_tag": "assistant", "system_tag": "system", "observation_tag": "tool"}
    else:
        prompt, response = ("instruction", "output") if fmt == "alpaca" else ("query", "response")
        cols = {"prompt": col(prompt), "query": col("input") if fmt == "alpaca" and has("input") else None,
                "response": col(response)}
        for k in ("system", "history"):
            if has(k):
                cols[k] = col(k)
        entry.update({"formatting": "alpaca", "columns": cols})
    return entry, None


def config(ctx: RenderContext) -> dict[str, Any]:
    wl = ctx.workload
    ftype = {"full": "full", "freeze": "freeze", "lora": "lora", "qlora": "lora"}[wl.method]
    c: dict[str, Any] = {"model_name_or_path": ctx.model_id, "trust_remote_code": True, "stage": "sft",
                         "do_train": True, "finetuning_type": ftype}
    if ftype == "lora":
        targets = ["all"] if wl.lora_targets == ("all-linear",) else list(wl.lora_targets)
        c.update({"lora_rank": wl.lora_rank, "lora_alpha": wl.lora_alpha, "lora_target": ",".join(targets),
                  "lora_dropout": 0.0})  # what trainfit sizes (LLaMA-Factory's default too)
    if wl.method == "qlora":
        c.update({"quantization_bit": 4, "quantization_method": "bnb"})
    if wl.method == "freeze":
        c["freeze_trainable_layers"] = wl.freeze_trainable_layers
    if ctx.dataset_from_data:  # the plan's data file, described in dataset_info.json beside this config
        entry, _why = dataset_entry(ctx)
        c.update({"dataset": DATA_NAME, "dataset_dir": "."} if entry else {"dataset": PLACEHOLDER})
    else:
        c["dataset"] = ctx.dataset if "/" not in ctx.dataset else "alpaca_en_demo"
    c.update({"template": "qwen3", "cutoff_len": wl.seq_len,
              "per_device_train_batch_size": wl.micro_batch, "gradient_accumulation_steps": wl.grad_accum,
              "learning_rate": ctx.lr, "lr_scheduler_type": "cosine",
              "optim": OPTIMIZERS[wl.optimizer], "flash_attn": LF_ATTN[wl.attention]})
    # packing: rows of cutoff_len tokens (the plan's step budget); neat_packing keeps the samples apart, written
    # with FlashAttention-2 only (other kernels get a (batch, 1, S, S) mask that trainfit does not size)
    c["packing"] = wl.packing
    if wl.packing and wl.attention == "flash":
        c["neat_packing"] = True
    if ctx.max_steps:
        c["max_steps"] = ctx.max_steps
    else:
        c["num_train_epochs"] = float(ctx.epochs if ctx.epochs is not None else 1)
    c.update(LF_PRECISION[wl.precision])
    if not wl.grad_ckpt:
        c["disable_gradient_checkpointing"] = True
    if wl.loss == "fused":
        c["enable_liger_kernel"] = True
    if wl.strategy.startswith("zero"):
        c["deepspeed"] = DS_PATH
    c.update({"output_dir": ctx.ckpt_dir, "overwrite_output_dir": False, "save_steps": ctx.save_steps,
              "save_total_limit": 2, "logging_steps": 10, "report_to": "none"})
    return c


def render(ctx: RenderContext) -> dict[str, str]:
    body = dump_yaml(config(ctx))
    note = ("# resume_from_checkpoint: unset on purpose -- LLaMA-Factory resumes from the newest checkpoint-N\n"
            "# in output_dir (on the checkpoint mount) because overwrite_output_dir is false.\n")

    kernels = model_kernels(ctx.model)
    if kernels:
        note += ("# before training: pip install " + " ".join(pkg for _m, pkg, _v in kernels)
                 + "  (linear-attention kernels the plan's speed assumes; causal-conv1d with --no-build-isolation)\n")
    if ctx.workload.gpus > 1:
        note += ("# multi-GPU: FORCE_TORCHRUN=1 NNODES=$WORLD_SIZE NODE_RANK=$RANK "
                 "llamafactory-cli train llamafactory.yaml  (ds_config.json beside it)\n")
    entry, _why = dataset_entry(ctx)
    if entry is not None:
        note += (f"# dataset: {DATA_NAME} is the plan's data file, described in dataset_info.json (dataset_dir: the "
                 "folder you start in)\n")
    out = {"llamafactory.yaml": hash_header(ctx, "llamafactory.yaml: LLaMA-Factory train config") + note + body}
    if entry is not None:
        out["dataset_info.json"] = json.dumps({DATA_NAME: entry}, indent=2) + "\n"
    if ctx.workload.strategy.startswith("zero"):
        out.update(render_ds_config(ctx))
    return out


def llamafactory_workload(c: dict, *, num_layers: int | None = None) -> tuple[dict, list[str]]:
    """Workload fields of a LLaMA-Factory config (the inverse of :func:`config`)."""
    kw: dict = {}
    assumed: list[str] = []
    s = {k: ("" if v is None else str(v).lower() if isinstance(v, bool) else str(v)) for k, v in c.items()}
    ftype = s.get("finetuning_type", "")
    if ftype == "lora":
        kw["method"] = "qlora" if s.get("quantization_bit") == "4" else "lora"
        assumed.extend(lora_dropout_note(s.get("lora_dropout", "0")))
        tg = s.get("lora_target", "all")
        kw["lora_targets"] = ("all-linear",) if tg in ("all", "") else tuple(x.strip() for x in tg.split(",") if x.strip())
    elif ftype == "freeze":
        kw["method"] = "freeze"
        if s.get("freeze_trainable_layers", "").isdecimal():
            kw["freeze_trainable_layers"] = int(s["freeze_trainable_layers"])
    else:
        kw["method"] = "full"
        if not ftype:
            assumed.append(_("full fine-tuning"))
    for k, name in (("lora_rank", "lora_rank"), ("lora_alpha", "lora_alpha"), ("cutoff_len", "seq_len"),
                    ("per_device_train_batch_size", "micro_batch"), ("gradient_accumulation_steps", "grad_accum")):
        if s.get(k, "").isdecimal():
            kw[name] = int(s[k])
    if "seq_len" not in kw:
        assumed.append(_("seq_len 2048 (cutoff_len not set)"))
    # LLaMA-Factory: packing unset = on for pre-training (stage pt) only; neat_packing turns packing on
    packing = s.get("packing", "")
    kw["packing"] = s.get("neat_packing") == "true" or packing == "true" or (packing == "" and s.get("stage") == "pt")
    if s.get("fp16") == "true":
        kw["precision"] = "fp16"
    elif s.get("pure_bf16") == "true":
        kw["precision"] = "bf16"
    elif s.get("bf16") == "true":
        kw["precision"] = "amp-bf16"
    inv_attn = {v: k for k, v in LF_ATTN.items()}
    if s.get("flash_attn") in inv_attn:
        kw["attention"] = inv_attn[s["flash_attn"]]
    kw.update(optimizer_read(s.get("optim"), assumed))
    kw["grad_ckpt"] = s.get("disable_gradient_checkpointing") != "true"
    kw["loss"] = "fused" if s.get("enable_liger_kernel") == "true" else "standard"
    return kw, assumed
