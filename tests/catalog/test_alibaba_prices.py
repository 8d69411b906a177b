"""Alibaba prices (issue 25): the bundled PAI Lingjun subscription example, the ECS list price standing in for
PAI-DLC public resources only, and the cheapest-region choice without --region."""

from __future__ import annotations

import pytest

from trainfit.catalog import prices as P
from trainfit.catalog.instances import get_instance

LINGJUN = "ml.gu7xf.c96m1600.8-gu108"


def test_lingjun_subscription_example_is_bundled_as_subscription_only():
    rows = P.prices_for("alibaba", "pai-lingjun", LINGJUN)
    assert len(rows) == 1
    r = rows[0]
    assert (r.billing, r.currency, r.region, r.verified) == ("subscription", "USD", "cn-wulanchabu", True)
    # the page states USD 23,932.70 per node-month; stored per hour at 730 h/month
    assert r.price_per_hour * P.HOURS_PER_MONTH == pytest.approx(23_932.70, abs=0.05)
    assert r.source.startswith("https://www.alibabacloud.com/help/en/pai/") and r.as_of == "2026-03-10"
    # never a pay-as-you-go price
    assert P.latest_price("alibaba", "pai-lingjun", LINGJUN) is None
    assert P.price_for_instance(get_instance(LINGJUN), "cn-wulanchabu") is None


def test_a_plan_on_a_subscription_only_type_shows_the_subscription_price_but_no_cost():
    from trainfit.plan.pricing import time_and_cost

    tc = time_and_cost(inst=get_instance(LINGJUN), hours=10.0, gpus=8, trainable_params=10**9, nodes=1, spot=False,
                       region="cn-wulanchabu")
    assert tc.part.cost is None and tc.part.price_per_hour is None
    note = next(n for n in tc.notes if "only a subscription price" in n)
    assert "23,932.70 USD per node-month in cn-wulanchabu" in note and "not used as a pay-as-you-go" in note


def _overlay(tmp_path, rows):
    import yaml

    from trainfit.catalog import set_overlay_path

    p = tmp_path / "ov.yaml"
    p.write_text(yaml.safe_dump({"prices": rows}), encoding="utf-8")
    set_overlay_path(p)
    return p


def _row(itype, rc, region, price, **kw):
    return {"provider": "alibaba", "resource_class": rc, "instance_type": itype, "region": region, "billing": "payg",
            "price_per_hour": price, "currency": "CNY", "verified": True, "source": "my bill", "as_of": "2026-11-01",
            **kw}


def test_ecs_price_stands_in_for_pai_public_only_and_own_prices_win(tmp_path):
    a10 = "ecs.gn7i-c8g1.2xlarge"
    _overlay(tmp_path, [_row(a10, "ecs", "cn-hangzhou", 12.0), _row(a10, "ecs", "cn-beijing", 11.0),
                        _row(LINGJUN, "ecs", "cn-wulanchabu", 1.0)])
    inst = get_instance(a10)
    got = P.price_for_instance(inst, None)
    assert got.price_per_hour == 11.0 and got.region == "cn-beijing"  # the cheapest region
    assert "PAI-DLC public resources" in got.source and got.resource_class == "pai-public"
    assert P.price_for_instance(inst, "cn-hangzhou").price_per_hour == 12.0
    # a Lingjun spec is not an ECS instance: no stand-in
    assert P.price_for_instance(get_instance(LINGJUN), "cn-wulanchabu") is None
    # a price of the class itself beats the stand-in, and says nothing about ECS
    _overlay(tmp_path, [_row(a10, "ecs", "cn-hangzhou", 12.0), _row(a10, "pai-public", "cn-hangzhou", 13.0)])
    own = P.price_for_instance(inst, "cn-hangzhou")
    assert own.price_per_hour == 13.0 and "ECS" not in own.source
    assert [r.price_per_hour for r in P.regional_prices(inst)] == [13.0]


def test_region_notes(tmp_path):
    from trainfit.plan.pricing import region_notes

    a10, same = get_instance("ecs.gn7i-c8g1.2xlarge"), get_instance("ecs.gn7i-c16g1.4xlarge")
    _overlay(tmp_path, [_row(a10.instance_type, "ecs", "cn-hangzhou", 12.0),
                        _row(a10.instance_type, "ecs", "cn-beijing", 11.0),
                        _row(same.instance_type, "ecs", "cn-hangzhou", 20.0),
                        _row(same.instance_type, "ecs", "cn-beijing", 20.0)])
    notes = region_notes("cn-hangzhou", [a10, same])
    assert len(notes) == 1 and same.instance_type in notes[0] and a10.instance_type not in notes[0]
    notes = region_notes("cn-shanghai", [a10])
    assert "no cn-shanghai list price" in notes[0]
    notes = region_notes(None, [a10, same])
    assert "cheapest region" in notes[0] and "cn-beijing" in notes[0]


def test_region_note_for_a_tencent_list_price_does_not_point_at_the_alibaba_refresh():
    from trainfit.plan.pricing import region_notes

    notes = region_notes("ap-guangzhou", [get_instance("GN7.2XLARGE32")])
    assert len(notes) == 1 and "changes nothing" in notes[0] and "alibaba" not in notes[0]
