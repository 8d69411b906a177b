"""The global batch the planner chooses: tokens per optimizer step in a stated range per method, reached with
gradient accumulation (docs/launch.md, "Global batch").

A plan used to keep gradient accumulation at 1, so its global batch was whatever micro-batch fitted times the
data-parallel ranks: 1 sample per step for a LoRA job on one small GPU, tens of thousands on a large cluster.
The optimizer's batch is a training choice, not a by-product of memory, so the planner now aims at a number of
tokens per optimizer step and reaches it with accumulation:

* full fine-tuning (and ``freeze``): 2^19 = 524,288 tokens per step, within [2^18, 2^22]. Published SFT recipes
  sit at the bottom of that range: Llama 2-Chat SFT used 64 packed sequences of 4,096 tokens = 262,144 tokens per
  step (Touvron et al. 2023, sec. 3.1, https://arxiv.org/abs/2307.09288); Tulu 3 SFT an effective batch of 128
  sequences of 4,096 = 524,288 (Lambert et al. 2024, https://arxiv.org/abs/2411.15124). The top, 4M tokens, is
  Llama 2's pre-training batch (same paper, sec. 2.2): beyond it fine-tuning takes fewer, larger steps than
  pre-training did.
* LoRA and QLoRA: 2^17 = 131,072 tokens per step, within [2^15, 2^19]: a quarter of full fine-tuning's, because
  LoRA loses more than full fine-tuning as the batch grows ("LoRA Without Regret", Schulman et al., Thinking
  Machines 2025, https://thinkingmachines.ai/blog/lora/: LoRA is less tolerant of large batch sizes). The numbers
  are trainfit's choice inside that finding, not a published optimum.
* at least :data:`MIN_OPTIMIZER_STEPS` steps for the token budget (a warm-up and a decay need steps): a small
  budget lowers the target, never below the range's floor.

``--global-batch N`` pins the samples per step instead; ``--grad-accum N`` pins the accumulation (and the global
batch follows from the micro-batch that fits). With more data-parallel ranks than the target's samples, one
sample per rank (accumulation 1) is the smallest global batch the layout can run.
"""

from __future__ import annotations

import math

from trainfit.workload import Workload

#: method -> (lowest, target, highest) tokens per optimizer step.
TOKENS_PER_STEP: dict[str, tuple[int, int, int]] = {
    "full": (2**18, 2**19, 2**22), "freeze": (2**18, 2**19, 2**22),
    "lora": (2**15, 2**17, 2**19), "qlora": (2**15, 2**17, 2**19),
}
#: The token budget should give at least this many optimizer steps (warm-up and decay need steps).
MIN_OPTIMIZER_STEPS = 200


def target_tokens_per_step(method: str, tokens: float | None) -> float:
    """Tokens per optimizer step the planner aims at for ``method`` and a budget of ``tokens``."""
    lo, target, _ = TOKENS_PER_STEP[method]
    if tokens:
        target = min(target, tokens / MIN_OPTIMIZER_STEPS)
    return max(lo, target)


def default_global_batch(method: str, seq_len: int, tokens: float | None) -> int:
    """Samples per optimizer step (packed rows of ``seq_len`` tokens) the planner aims at: at least 1."""
    return max(1, round(target_tokens_per_step(method, tokens) / seq_len))


def with_target_batch(wl: Workload, tokens: float | None) -> Workload:
    """``wl`` with the gradient accumulation that reaches :func:`default_global_batch` at its micro-batch (what
    ``render MODEL ...`` without a plan file and without ``--grad-accum`` renders; the planner also lowers the
    micro-batch where accumulation does not fit, ``plan/layout_fit.py``)."""
    gb = default_global_batch(wl.method, wl.seq_len, tokens)
    return wl.with_(grad_accum=max(1, math.ceil(gb / (wl.micro_batch * wl.dp))))
