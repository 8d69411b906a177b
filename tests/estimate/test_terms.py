"""The memory terms' descriptors (estimate/terms.py): one list that the estimator, the trace, the CLI tables and the
web page read."""

from __future__ import annotations

from dataclasses import fields

import pytest

from trainfit import i18n
from trainfit.estimate.memory import estimate_memory
from trainfit.estimate.terms import TENSOR_TERMS, TERMS, TERMS_BY_KEY, MemoryTerms, term_label
from trainfit.models import get_model
from trainfit.workload import Workload


def test_memory_terms_fields_are_the_tensor_terms():
    assert tuple(f.name for f in fields(MemoryTerms))[1:] == TENSOR_TERMS
    assert TENSOR_TERMS == tuple(t.key for t in TERMS if t.key != "overhead")
    assert not TERMS_BY_KEY["overhead"].in_tensor_peak
    m = MemoryTerms("forward", 1.0, 2.0, 3.0, 4.0, 5.0, 6.0)
    assert dict(m.items()) == dict(zip(TENSOR_TERMS, (1.0, 2.0, 3.0, 4.0, 5.0, 6.0))) and m.total == 21.0
    assert m.plus_gradients(0.5) == MemoryTerms("forward", 1.0, 2.5, 3.0, 4.0, 5.0, 6.0)


def test_the_estimate_breaks_down_by_the_terms_in_order():
    est = estimate_memory(get_model("Qwen3-0.6B"), Workload(method="lora", seq_len=1024))
    assert tuple(est.breakdown_gib) == tuple(t.key for t in TERMS)
    assert sum(est.breakdown_gib[k] for k in TENSOR_TERMS) == pytest.approx(est.tensor_peak_gib)


def test_labels_in_both_languages():
    for t in TERMS:
        for msg in (t.label, t.short_label, *(m for _, m in t.loss_labels)):
            assert i18n.is_translated(msg), msg
    logits = TERMS_BY_KEY["logits_loss"]
    assert logits.text() == logits.text("bf16") == "logits + loss (fp32)"
    assert logits.text("half") == "logits + loss (16-bit)"
    assert term_label("policy_update") == "policy_update"  # an RL plan's term: its key
    with i18n.language("zh"):
        assert term_label("optimizer") == "优化器状态（含 fp32 主权重）"
        assert logits.page_entry("en")["label"] == "logits & loss"
        assert logits.page_entry("zh")["label"] == "logits 与损失"
