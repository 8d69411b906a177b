"""``check``'s DeepSpeed config rule (``deepspeed-config``): a config read against DeepSpeed's own schema, and what
fills its ``"auto"`` values. Split out of :mod:`trainfit.check.rules`, which runs it with the others."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainfit.jobspec.facts import JobFacts
from trainfit.i18n import N_, _, translate
from trainfit.rules.types import ERROR, INFO, WARNING, Violation

if TYPE_CHECKING:
    from trainfit.check.context import CheckOptions

#: DeepSpeed's own schema for the settings check reads (deepspeed/runtime/zero/config.py: ``stage`` is a
#: ZeroStageEnum 0-3, offload ``device`` none|cpu|nvme in offload_config.py; deepspeed/runtime/config.py asserts
#: train_batch_size, train_micro_batch_size_per_gpu and gradient_accumulation_steps > 0;
#: https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/runtime/zero/config.py).
DS_STAGES = (0, 1, 2, 3)
DS_OFFLOAD_DEVICES = ("none", "cpu", "nvme")
DS_BATCH_KEYS = ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps")
#: What the Hugging Face Trainer fills in for ``"auto"`` (transformers/integrations/deepspeed.py,
#: HfTrainerDeepSpeedConfig.trainer_config_process / trainer_config_finalize).
DS_AUTO_FROM = {"train_micro_batch_size_per_gpu": "per_device_train_batch_size",
                "gradient_accumulation_steps": "gradient_accumulation_steps",
                "train_batch_size": N_("world size x micro-batch x gradient accumulation"),
                "gradient_clipping": "max_grad_norm"}


def _ds_configs(f: JobFacts) -> list[tuple[str, dict]]:
    out = []
    if isinstance(f.ds_config, dict):
        out.append((_("DeepSpeed config"), f.ds_config))
    return out


def rule_deepspeed_config(f: JobFacts, o: CheckOptions) -> list[Violation]:
    """A DeepSpeed config checked against DeepSpeed's own schema: a ZeRO stage outside 0-3, a batch size that is
    not a positive integer or "auto", an offload device DeepSpeed does not know. ``"auto"`` values are named with
    what fills them in (the HF Trainer's arguments), and a config whose batch sizes are all ``"auto"`` read on its
    own says that its batch cannot be checked."""
    out: list[Violation] = []
    for where, cfg in _ds_configs(f):
        zero = cfg.get("zero_optimization") if isinstance(cfg.get("zero_optimization"), dict) else {}
        stage = zero.get("stage")
        if "stage" in zero and (isinstance(stage, bool) or stage not in DS_STAGES):
            out.append(Violation(rule="deepspeed-config", severity=ERROR,
                                 message=_("{where}: zero_optimization.stage is {value!r}; DeepSpeed's ZeRO stages are "
                                           "0, 1, 2 and 3 (DeepSpeed refuses to start)").format(
                                     where=where, value=str(stage)[:20]),
                                 fix=_("use stage 1, 2 or 3")))
        for key in ("offload_param", "offload_optimizer"):
            dev = zero.get(key).get("device") if isinstance(zero.get(key), dict) else None
            if dev is not None and dev not in DS_OFFLOAD_DEVICES:
                out.append(Violation(rule="deepspeed-config", severity=ERROR,
                                     message=_("{where}: zero_optimization.{key}.device is {value!r}; DeepSpeed "
                                               "knows none, cpu and nvme").format(where=where, key=key,
                                                                                  value=str(dev)[:20]),
                                     fix=_("use cpu (or nvme with nvme_path)")))
        autos = []
        for key in DS_BATCH_KEYS + ("gradient_clipping",):
            v = cfg.get(key)
            if v == "auto":
                autos.append(key)
            elif key in DS_BATCH_KEYS and v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                out.append(Violation(rule="deepspeed-config", severity=ERROR,
                                     message=_("{where}: {key} is {value!r}; DeepSpeed needs a positive integer "
                                               "(or \"auto\" under the HF Trainer)").format(where=where, key=key,
                                                                                           value=str(v)[:20]),
                                     fix=_("set {key} to a positive integer or \"auto\"").format(key=key)))
        if autos:
            filled = "; ".join(f"{k} <- {translate(DS_AUTO_FROM[k])}" for k in autos)
            batch_autos = [k for k in autos if k in DS_BATCH_KEYS]
            alone = f.kind == "deepspeed" and len(batch_autos) == len(DS_BATCH_KEYS)
            if alone:
                msg = _("{where}: \"auto\" values are filled in by the Hugging Face Trainer from its arguments "
                        "({filled}); this file alone states no batch size, so the batch cannot be checked here")
            else:
                msg = _("{where}: \"auto\" values are filled in by the Hugging Face Trainer from its arguments "
                        "({filled})")
            out.append(Violation(
                rule="deepspeed-config", severity=WARNING if alone else INFO,
                message=msg.format(where=where, filled=filled),
                fix=_("check the launch script or the training arguments that use this config (`trainfit check` on "
                      "them reads the batch), or write the numbers into the config")))
    return out


__all__ = ["DS_AUTO_FROM", "DS_BATCH_KEYS", "DS_OFFLOAD_DEVICES", "DS_STAGES", "rule_deepspeed_config"]
