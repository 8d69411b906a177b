"""Issue 26, item 3 (small global batches): what a step costs beyond its FLOPs when the batch is small. Tensor
parallel collectives at micro-batch 1 and short sequences are latency-bound: each costs NCCL's ring latency
(base + one hop per ring step, src/graph/tuning.cc) besides its bytes."""

from __future__ import annotations

import pytest

from trainfit.catalog import get_gpu
from trainfit.estimate.comm import (NCCL_RING_BASE_LATENCY_US, NCCL_RING_STEP_LATENCY_US, links_for,
                                    ring_latency_seconds, ring_seconds, tp_term, ACT_BYTES)
from trainfit.models import get_model
from trainfit.catalog.hardware import hardware_for
from trainfit.workload import Workload

H100 = hardware_for(get_gpu("H100-SXM"), None)
M = get_model("Qwen3-32B")


def test_ring_latency_is_nccls_model():
    # an 8-rank all-reduce over NVLink: 8.4 us + 2 x 7 x 3.4 us
    assert ring_latency_seconds(8, 2, "intra") == pytest.approx((8.4 + 14 * 3.4) * 1e-6)
    assert ring_latency_seconds(4, 1, "inter") == pytest.approx((NCCL_RING_BASE_LATENCY_US
                                                                 + 3 * NCCL_RING_STEP_LATENCY_US["inter"]) * 1e-6)
    assert ring_latency_seconds(1, 2, "intra") == 0.0


@pytest.mark.parametrize("seq", [256, 2048, 16384])
def test_tp_collectives_cost_bytes_plus_latency(seq):
    # without sequence parallelism: all-reduces, 2 per layer and pass (forward, backward, recomputed forward)
    wl = Workload(gpus=8, tp=8, seq_len=seq, grad_accum=4, grad_ckpt=True, strategy="zero1", sequence_parallel=False)
    links = links_for(wl, H100, [])
    t = tp_term(M, wl, links)
    n = 4 * M.num_layers * (2 + 2 + 2)
    buf = seq * M.hidden_size * ACT_BYTES
    bytes_s = n * 2 * ring_seconds(buf, 8, links.intra, links.link_eff)
    lat_s = n * (8.4 + 14 * 3.4) * 1e-6
    assert t.seconds == pytest.approx(bytes_s + lat_s)
    if seq == 256:  # micro-batch 1 of 256 tokens: the messages are latency-bound
        assert lat_s > bytes_s
    # with sequence parallelism: all-gathers and reduce-scatters, 4 per layer forward, 6 backward (the weight
    # gradient gathers its input again), 4 recomputed; each one launch of 7 ring steps
    sp = tp_term(M, wl.with_(sequence_parallel=True), links)
    n_sp = 4 * M.num_layers * (4 + 6 + 4)
    assert sp.seconds == pytest.approx(n_sp * ring_seconds(buf, 8, links.intra, links.link_eff)
                                       + n_sp * (8.4 + 7 * 3.4) * 1e-6)
