"""Hostile-input fuzz suite (issue 10): generated CLI options, config.json files, job files of every kind, plan.json
and catalog overlays run through ``trainfit.cli.main`` in-process, each under a time bound. No traceback, no hang,
exit code 0/1/2, strict JSON output, and rendered files that re-parse to exactly the values that went in.

The generators and oracles live in ``fuzzkit.py`` (``benchmarks/fuzz.py`` runs them at >= 10,000 cases).
Budget: about a minute on 2 cores (derandomized, so CI runs the same cases every time).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings

import fuzzkit as fk

FAST = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                       HealthCheck.filter_too_much, HealthCheck.data_too_large])


def _ok(outcome, problems):
    assert not problems, (outcome.argv, problems, outcome.err[-500:], outcome.traceback[-2000:])


@pytest.mark.parametrize("command", ["memory", "plan", "render", "check"])
@FAST
@given(data=fk.st.data())
def test_cli_options(command, data):
    argv = data.draw(fk.cli_argv(command))
    with fk.workdir() as d:
        _ok(*fk.run_argv(argv, d))


@pytest.mark.slow
@settings(FAST, max_examples=150)
@given(job=fk.job_file())
def test_job_files(job):
    with fk.workdir() as d:
        _ok(*fk.check_job_case(*job, d))


@settings(FAST, max_examples=80)
@given(text=fk.config_file())
def test_config_files(text):
    with fk.workdir() as d:
        _ok(*fk.config_case(text, d))


@settings(FAST, max_examples=40)
@given(text=fk.overlay_text())
def test_overlays(text):
    with fk.workdir() as d:
        outs, problems = fk.overlay_case(text, d)
        assert not problems, (problems, [o.err[-300:] for o in outs])


@settings(FAST, max_examples=40)
@given(doc=fk.plan_document())
def test_plan_files(doc):
    with fk.workdir() as d:
        _ok(*fk.plan_case(doc, d))


@pytest.mark.slow
@settings(FAST, max_examples=60)
@given(vals=fk.render_values())
def test_render_round_trip(vals):
    with fk.workdir() as d:
        _ok(*fk.render_case(vals, d))


@pytest.mark.parametrize("value", [v for v in fk.HOSTILE if "\n" in v or "$(" in v or "`" in v or "\u2028" in v
                                   or "\x85" in v or "\r" in v or ";" in v])
@pytest.mark.parametrize("field", ["region", "image", "dataset", "job-name", "checkpoint-uri", "vpc-id"])
def test_render_never_writes_an_injected_value(field, value):
    with fk.workdir() as d:
        o, problems = fk.render_case({field: value}, d)
        _ok(o, problems)
        if o.rc == 0:  # accepted only after the gate made it harmless: nothing of the payload runs
            for p in (d / "out").glob("*"):
                assert "\ntouch /tmp/pwned" not in p.read_text(), p.name


def test_rendered_files_of_plain_values_round_trip():
    vals = {"region": "cn-hangzhou", "image": "registry.example.com/team/train:1.0", "dataset": "/mnt/data/x.jsonl",
            "checkpoint-uri": "oss://bkt/ckpt/", "vpc-id": "vpc-abc123", "lr": "0.00012345678", "epochs": "3.14159265"}
    with fk.workdir() as d:
        o, problems = fk.render_case(vals, d)
        assert o.rc == 0, o.err
        assert problems == []
