"""Cost model tests; every expected number is worked out by hand in the comments."""

from __future__ import annotations

import pytest

from trainfit.plan.cost import (
    CostError,
    Price,
    SpotPolicy,
    estimate_cost,
    price_from_catalog,
)

P100 = Price(instance_type="x8", price_per_instance_hour=100.0, currency="CNY", gpus_per_instance=8,
             spot_price_fraction=0.3)


def test_on_demand_arithmetic():
    c = estimate_cost(hours=10, gpus=16, price=Price(price_per_instance_hour=100.0, currency="CNY",
                                                     gpus_per_instance=8))
    assert c.instances == 2                    # 16 / 8
    assert c.instance_hours == 20              # 10 h x 2
    assert c.gpu_hours == 160
    assert c.cost == pytest.approx(2000.0)     # 20 x 100
    assert c.currency == "CNY" and c.spot is None and c.fix is None


def test_partial_instance_is_billed_whole():
    c = estimate_cost(hours=3, gpus=4, price=Price(price_per_instance_hour=50.0, currency="USD",
                                                   gpus_per_instance=8))
    assert c.instances == 1 and c.cost == pytest.approx(150.0)
    assert any("idle" in a for a in c.assumptions)


def test_spot_expected_overhead_by_hand():
    c = estimate_cost(hours=10, gpus=16, price=P100, spot=SpotPolicy(
        interruption_rate_per_node_hour=0.02, checkpoint_interval_hours=0.5, restart_hours=0.25))
    s = c.spot
    # lambda = 2 nodes x 0.02 = 0.04 /h; lost per interruption = 0.5/2 + 0.25 = 0.5 h; waste = 0.02
    assert s.interruption_rate_per_job_hour == pytest.approx(0.04)
    assert s.lost_hours_per_interruption == pytest.approx(0.5)
    assert s.expected_hours == pytest.approx(10 / 0.98)                 # 10.2041 h
    assert s.expected_extra_hours == pytest.approx(10 / 0.98 - 10)
    assert s.expected_interruptions == pytest.approx(0.04 * 10 / 0.98)  # 0.408
    assert s.price_per_instance_hour == pytest.approx(30.0)            # 0.3 x 100
    assert s.expected_cost == pytest.approx(10 / 0.98 * 2 * 30)         # 612.24
    assert s.savings_vs_on_demand == pytest.approx(2000 - 10 / 0.98 * 60)
    assert s.savings_fraction == pytest.approx(1 - 0.3 / 0.98)
    assert s.discount == pytest.approx(0.7) and s.feasible


def test_checkpoint_stall_stretches_productive_time():
    s = estimate_cost(hours=10, gpus=8, price=P100, spot=SpotPolicy(
        interruption_rate_per_node_hour=0.0, checkpoint_interval_hours=0.5, checkpoint_write_hours=0.01)).spot
    assert s.expected_hours == pytest.approx(10 * (1 + 0.01 / 0.5))  # no interruptions: 10.2 h
    assert s.expected_interruptions == 0


def test_spot_infeasible_when_interruptions_outpace_checkpoints():
    s = estimate_cost(hours=10, gpus=32, price=P100, spot=SpotPolicy(
        interruption_rate_per_node_hour=1.0, checkpoint_interval_hours=0.5, restart_hours=0.25)).spot
    # lambda = 4 /h x 0.5 h lost = 2 >= 1
    assert not s.feasible and s.expected_cost is None and "checkpoint more often" in s.fix


def test_spot_can_cost_more_than_on_demand():
    s = estimate_cost(hours=10, gpus=8, price=Price(price_per_instance_hour=100.0, currency="CNY",
                                                    gpus_per_instance=8, spot_price_fraction=0.9),
                      spot=SpotPolicy(interruption_rate_per_node_hour=0.5)).spot
    # waste = 0.5 x 0.5 = 0.25 -> 13.33 h x 90 = 1200 > 1000
    assert s.expected_cost == pytest.approx(10 / 0.75 * 90)
    assert s.savings_vs_on_demand < 0


def test_no_price_gives_none_and_a_fix():
    c = estimate_cost(hours=5, gpus=8, price=None, instance_type="ml.gu7xf.8xlarge-gu108")
    assert c.cost is None and c.spot is None
    assert "~/.config/trainfit/catalog.yaml" in c.fix and "ml.gu7xf.8xlarge-gu108" in c.fix
    c2 = estimate_cost(hours=5, gpus=8, price=Price(price_per_instance_hour=None, gpus_per_instance=8))
    assert c2.cost is None and "price_per_hour" in c2.fix


def test_bad_inputs():
    with pytest.raises(CostError):
        estimate_cost(hours=-1, gpus=8, price=P100)
    with pytest.raises(CostError):
        Price(price_per_instance_hour=1.0, spot_price_fraction=1.5)
    with pytest.raises(CostError):
        SpotPolicy(checkpoint_interval_hours=0)


def test_price_from_catalog_record():
    p = price_from_catalog({"instance_type": "ecs.x", "price_per_hour": 12.5, "currency": "CNY", "gpu_count": 2,
                            "spot_discount": 0.2, "source": "bill"})
    assert p.price_per_instance_hour == 12.5 and p.gpus_per_instance == 2
    assert p.spot_price_fraction == 0.2 and p.spot_discount == pytest.approx(0.8)
    empty = price_from_catalog({"instance_type": "ecs.y"})
    assert empty.price_per_instance_hour is None and empty.gpus_per_instance == 1


def test_spot_warning_shows_a_small_checkpoint_size(capsys):
    """A LoRA checkpoint (adapters + their optimizer states, well under 1 GB) was printed as 'a 0 GB checkpoint ...
    = 0 s', which reads as if nothing were saved."""
    from trainfit.cli import main

    assert main(["plan", "Qwen3-8B", "--method", "lora", "--tokens", "200M", "--gpu", "A100", "--spot", "--json"]) == 0
    import json as _json
    w = [x for x in _json.loads(capsys.readouterr().out)["plans"][0]["warnings"] if x.startswith("spot:")][0]
    assert "a 0 GB" not in w and "= 0 s" not in w
