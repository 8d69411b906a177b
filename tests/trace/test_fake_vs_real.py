"""The fake-tensor trace must give the same peak as the same tracker on a real CPU run (within 1%)."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from trainfit.trace.runner import run_trace  # noqa: E402
from trainfit.workload import Workload  # noqa: E402

from _trace_tiny import tiny_qwen3, tiny_qwen3_moe  # noqa: E402

pytestmark = pytest.mark.slow

CASES = {
    "full-noGC-foreach": dict(grad_ckpt=False, optimizer="adamw-foreach"),
    "full-GC-fused": dict(grad_ckpt=True),
    "eager-noGC": dict(grad_ckpt=False, attention="eager"),
    "amp-noGC": dict(grad_ckpt=False, precision="amp-bf16"),
    "lora-noGC": dict(method="lora", grad_ckpt=False),
    "lora-GC": dict(method="lora", grad_ckpt=True, lora_targets=("q_proj", "v_proj")),
    "freeze-GC": dict(method="freeze", grad_ckpt=True, freeze_trainable_layers=2),
    "accum2-sgd": dict(grad_ckpt=False, grad_accum=2, optimizer="sgd"),
    "adafactor-GC": dict(grad_ckpt=True, optimizer="adafactor"),
}


def _compare(shape, w):
    fake = run_trace(shape, w, fake=True)
    real = run_trace(shape, w, fake=False)
    assert fake.fake and not real.fake
    assert abs(fake.peak_bytes - real.peak_bytes) <= 0.01 * real.peak_bytes, (fake.peak_bytes, real.peak_bytes)
    assert fake.peak_phase == real.peak_phase
    for k, v in real.breakdown_gib.items():
        assert fake.breakdown_gib[k] == pytest.approx(v, rel=0.01, abs=1e-4), k
    assert fake.per_layer_activation_bytes == real.per_layer_activation_bytes
    return fake, real


@pytest.mark.parametrize("case", list(CASES))
def test_dense_fake_matches_real(case):
    kw = CASES[case]
    if kw.get("method") == "lora":
        pytest.importorskip("peft")
    fake, real = _compare(tiny_qwen3(vocab=4096), Workload(seq_len=64, **kw))
    # In practice the two are byte-identical.
    assert fake.peak_bytes == real.peak_bytes


def test_moe_fake_matches_real():
    fake, _ = _compare(tiny_qwen3_moe(), Workload(seq_len=64, grad_ckpt=False))
    assert any("grouped_mm" in n for n in fake.notes)


def test_moe_lora_all_linear_fake_matches_real():
    pytest.importorskip("peft")
    fake, _ = _compare(tiny_qwen3_moe(), Workload(seq_len=32, method="lora", grad_ckpt=False))
    # PEFT adapts the fused experts too (ParamWrapper), not only nn.Linear modules
    assert fake.params["trainable"] > 0


def test_fsdp2_two_ranks_fake_matches_real():
    import torch.distributed as dist

    if dist.is_initialized():
        pytest.skip("a process group is already initialized")
    shape = tiny_qwen3(vocab=4096)
    w = Workload(seq_len=64, grad_ckpt=True, strategy="fsdp", gpus=2)
    fake, _ = _compare(shape, w)
    assert not dist.is_initialized()
    # rank 0 holds half of the (padded) optimizer states: 2 bf16 states = 4 B/param / 2 ranks
    assert fake.breakdown_gib["optimizer"] * 2**30 == pytest.approx(4 * shape.total_params / 2, rel=0.01)
