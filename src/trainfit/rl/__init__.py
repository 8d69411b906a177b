"""RL fine-tuning sizing (GRPO, PPO, DPO with a colocated rollout engine): a pure core.

* :mod:`trainfit.rl.config`: :class:`RLConfig` and the documented defaults of verl, OpenRLHF, TRL,
  ms-swift and ChatLearn;
* :mod:`trainfit.rl.memory`: per-phase memory (rollout, train, sync), KV pool and concurrent sequences;
* :mod:`trainfit.rl.speed`: rollout tokens/s, policy-update time and the step-time split (``rl_step_speed``: the
  one step time of ``memory --rl``, ``plan --rl`` and ``render --rl``, on the GPU's node);
* :mod:`trainfit.rl.launch`: verl / ms-swift command writers and readers;
* :mod:`trainfit.rl.lint`: known OOM patterns of RL launch settings;
* :mod:`trainfit.rl.report`: ``rl_report(...)``, memory + speed + hours as one typed :class:`RLReport` (for the
  service layer);
* :mod:`trainfit.rl.summary`: :class:`RLSummary`, the RL part of a plan.

Nothing here parses arguments or prints; the CLI wiring is in ``trainfit._cli.rl_options``.
"""

from trainfit.rl.config import FRAMEWORK_DEFAULTS, FRAMEWORKS, FrameworkDefaults, RLConfig
from trainfit.rl.memory import (RLMemoryEstimate, estimate_rl_memory, kv_bytes_per_token,
                                linear_state_bytes_per_seq)
from trainfit.rl.report import RLReport, rl_report
from trainfit.rl.summary import RLSummary

__all__ = ["FRAMEWORK_DEFAULTS", "FRAMEWORKS", "FrameworkDefaults", "RLConfig", "RLMemoryEstimate", "RLReport",
           "RLSummary", "estimate_rl_memory", "kv_bytes_per_token", "linear_state_bytes_per_seq", "rl_report"]
