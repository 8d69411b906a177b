"""A tiny, deterministic Hugging Face Trainer run for the resume tests (CPU, seconds).

    python _train_tiny.py OUT_DIR --variant dense|accum|lora|moe [--steps N] [--save-steps N]

It resumes from the newest complete checkpoint (``trainfit.watch.resume_from``) and, when training ends
normally, writes every parameter to ``OUT_DIR/final.pt``. Test hooks, set through the environment:

* ``TINY_NOTICE_AT=K``, ``TINY_NOTICE_FILE=PATH``: at the end of step K create PATH (the scheduler's
  notice) and wait until ``trainfit watch`` has written the stop file, so the stop lands exactly at K.
* ``TINY_HANG_AT=K``, ``TINY_HANG_WHERE=step_end|save``, ``TINY_REACHED=PATH``: at step K (at its end, or
  inside its checkpoint save after the Trainer wrote the files but before the completion marker) write
  PATH with this process group id and sleep, waiting for the test's ``kill -9``.
* ``TINY_SLOW_DATA=SECONDS``: every batch takes this long to load (an input-bound run).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from transformers import Trainer, TrainerCallback, TrainingArguments, set_seed  # noqa: E402

from trainfit.integrations.hf import TrainfitCallback  # noqa: E402
from trainfit.watch import resume_from  # noqa: E402
from trainfit.watch.protocol import STOP_FILE_ENV  # noqa: E402

VOCAB, SEQ, SAMPLES = 128, 16, 48


class Synthetic(torch.utils.data.Dataset):
    """Fixed random token sequences (same on every launch), optionally slow to load."""

    def __init__(self, slow_s: float = 0.0) -> None:
        g = torch.Generator().manual_seed(1234)
        self.ids = torch.randint(0, VOCAB, (SAMPLES, SEQ), generator=g)
        self.slow_s = slow_s

    def __len__(self) -> int:
        return SAMPLES

    def __getitem__(self, i: int) -> dict:
        if self.slow_s:
            time.sleep(self.slow_s)
        x = self.ids[i]
        return {"input_ids": x, "labels": x.clone(), "attention_mask": torch.ones_like(x)}


def build_model(variant: str):
    set_seed(0)
    if variant == "moe":
        from transformers import Qwen3MoeConfig, Qwen3MoeForCausalLM

        cfg = Qwen3MoeConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, moe_intermediate_size=32,
                             num_experts=4, num_experts_per_tok=2, num_hidden_layers=2, num_attention_heads=4,
                             num_key_value_heads=2, head_dim=16, max_position_embeddings=64,
                             tie_word_embeddings=False, output_router_logits=True, router_aux_loss_coef=0.01)
        return Qwen3MoeForCausalLM(cfg)
    from transformers import Qwen3Config, Qwen3ForCausalLM

    cfg = Qwen3Config(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=64,
                      tie_word_embeddings=False)
    model = Qwen3ForCausalLM(cfg)
    if variant == "lora":
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0,
                                                 target_modules=["q_proj", "v_proj"]))
    return model


class Hooks(TrainerCallback):
    """Test-only fault injection; runs before TrainfitCallback in every event."""

    def __init__(self) -> None:
        self.notice_at = int(os.environ.get("TINY_NOTICE_AT", "0"))
        self.hang_at = int(os.environ.get("TINY_HANG_AT", "0"))
        self.hang_where = os.environ.get("TINY_HANG_WHERE", "step_end")

    def _hang(self) -> None:
        with open(os.environ["TINY_REACHED"] + ".tmp", "w") as f:
            json.dump({"pgid": os.getpgrp(), "pid": os.getpid()}, f)
        os.replace(os.environ["TINY_REACHED"] + ".tmp", os.environ["TINY_REACHED"])
        time.sleep(600)
        sys.exit(99)  # the test should have killed us long before

    def on_step_end(self, args, state, control, **kw):
        if self.notice_at and state.global_step == self.notice_at:
            open(os.environ["TINY_NOTICE_FILE"], "w").close()
            stop = os.environ[STOP_FILE_ENV]
            t0 = time.time()
            while not os.path.exists(stop):
                if time.time() - t0 > 60:
                    sys.exit(98)
                time.sleep(0.01)
        if self.hang_at and state.global_step == self.hang_at and self.hang_where == "step_end":
            self._hang()

    def on_save(self, args, state, control, **kw):
        if self.hang_at and state.global_step == self.hang_at and self.hang_where == "save":
            self._hang()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--variant", default="dense", choices=["dense", "accum", "lora", "moe"])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--save-steps", type=int, default=3)
    ap.add_argument("--metrics", default=None)
    ap.add_argument("--prometheus-port", type=int, default=None)
    ap.add_argument("--no-callback", action="store_true", help="leave TrainfitCallback to watch --hf-callback")
    a = ap.parse_args(argv)

    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    model = build_model(a.variant)
    ckpt_dir = os.path.join(a.out, "ckpt")
    targs = TrainingArguments(
        output_dir=ckpt_dir, max_steps=a.steps, per_device_train_batch_size=4,
        gradient_accumulation_steps=2 if a.variant == "accum" else 1, learning_rate=3e-3, warmup_steps=2,
        lr_scheduler_type="linear", max_grad_norm=1.0, weight_decay=0.01, optim="adamw_torch",
        save_strategy="steps", save_steps=a.save_steps, logging_steps=1, report_to=[], use_cpu=True, seed=0,
        data_seed=0, dataloader_num_workers=0, disable_tqdm=True, save_only_model=False)
    cb = TrainfitCallback(metrics_path=a.metrics or os.path.join(a.out, "metrics.jsonl"),
                          prometheus_port=a.prometheus_port, prometheus_addr="127.0.0.1")
    trainer = Trainer(model=model, args=targs,
                      train_dataset=Synthetic(float(os.environ.get("TINY_SLOW_DATA", "0"))),
                      callbacks=[Hooks()] if a.no_callback else [Hooks(), cb])
    trainer.train(resume_from_checkpoint=resume_from(ckpt_dir))
    if trainer.is_world_process_zero():
        state = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}
        torch.save(state, os.path.join(a.out, "final.pt"))
    if torch.distributed.is_initialized():
        # tear the gloo group down before the interpreter exits: left to the destructors, its threads can be
        # killed mid-flight ("terminate called without an active exception", SIGABRT) after a clean run
        torch.distributed.barrier()
        torch.distributed.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
