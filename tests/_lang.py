"""A checker for text that should be Chinese: the English sentences left in it.

``english_sentences(text)`` returns every run of 3 or more English words (ASCII letters only, separated by spaces)
that is not a name, a flag, a command in backticks, a URL, a path, a placeholder or a unit. A Chinese sentence may
quote names (``Qwen3-8B``, ``DeepSpeed``, ``ms-swift``), flags (``--method lora``) and units (``GiB``, ``tok/s``);
three plain English words in a row is a sentence left untranslated. Helpers may add names to ``NAMES``.
"""

from __future__ import annotations

import re

#: Lower-case words that are names, values or units, not English prose (method, engine, launcher, phase names...).
NAMES = frozenset("""
    qwen lora qlora full freeze dora deepspeed megatron fsdp fsdp2 ddp zero zero1 zero2 zero3 swift ms llama factory
    llamafactory torchrun pytorch torch vllm sglang verl openrlhf trl grpo ppo dpo rloo dapo cuda nccl rdma dlc pai
    ecs lingjun sky skypilot kubeflow json yaml csv jsonl parquet zip md sh py bf16 fp16 fp8 fp32 tf32 gib gb mib
    tok s ms h gpu gpus cpu vcpu vcpus mfu oom api http https localhost trainfit spot nvidia hopper ampere flash
    attn sdpa eager none auto true false null cpu nvme kv rollout mb ga gc tp pp ep cp sp dp
    aws azure gcp alibaba aliyun tencent generic user assistant system tool human gpt observation function_call
""".split())

_DROP = [
    re.compile(r"`[^`]*`"),                       # commands and code in backticks
    re.compile(r"\bhttps?://\S+"),                 # URLs
    re.compile(r"(?<!\w)--?[A-Za-z][\w-]*(?:[= ][^\s,;:，；：）)]+)?"),  # flags, with a value
    re.compile(r"\{[^{}]*\}"),                     # placeholders
    re.compile(r"(?:[\w.~-]*/)+[\w.-]+"),          # paths, units with a slash (tok/s, GiB/GPU)
]
_TOKEN = re.compile(r"\S+")
_STRIP = ".,;:!?()[]\"'“”‘’«»<>…"


def _is_english_word(tok: str) -> bool:
    word = tok.strip(_STRIP)
    if not word or not word.isascii() or not word.replace("'", "").replace("-", "").isalpha():
        return False
    if any(c.isupper() for c in word[1:]):       # DeepSpeed, GiB, OOM, ZeRO: names and units
        return False
    parts = word.lower().split("-")
    return not all(p in NAMES for p in parts)


def english_sentences(text: str) -> list[str]:
    """Each run of 3+ consecutive English words in ``text`` (one string per run), in order; [] when none."""
    out: list[str] = []
    for line in (text or "").splitlines():
        for pattern in _DROP:
            line = pattern.sub(" \0 ", line)
        run: list[str] = []
        for tok in _TOKEN.findall(line) + ["\0"]:
            if tok != "\0" and _is_english_word(tok):
                run.append(tok)
                if tok.rstrip()[-1:] in ".;:!?":  # a sentence ends here
                    if len(run) >= 3:
                        out.append(" ".join(run))
                    run = []
                continue
            if len(run) >= 3:
                out.append(" ".join(run))
            run = []
    return out
