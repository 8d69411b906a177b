"""A tiny tokenizer built on the fly (Hugging Face tokenizers, BPE trained on a few sentences) with a ChatML
template like Qwen3's, saved as a model folder the way `modelscope download` leaves one."""

from __future__ import annotations

import json

import pytest

CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
CORPUS = ["The quick brown fox jumps over the lazy dog.", "训练一个模型需要多少显存？", "Packing fills each sequence.",
          "What is 2 + 2? It is 4.", "Qwen3 models are trained in bf16 with AdamW."] * 20


@pytest.fixture(scope="session")
def tok_dir(tmp_path_factory):
    pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS, trainer)
    from tokenizers import decoders

    tok.decoder = decoders.ByteLevel()
    d = tmp_path_factory.mktemp("tiny-qwen")
    tok.save(str(d / "tokenizer.json"))
    (d / "tokenizer_config.json").write_text(json.dumps({
        "chat_template": CHATML, "eos_token": "<|im_end|>", "pad_token": "<unk>",
        "tokenizer_class": "PreTrainedTokenizerFast"}))
    return d
