"""benchmarks/first_contact.py: rows added after a commit are predicted by that commit's exported tree and by the
current code, and the errors and summary follow from the predictions (a tiny case: two rows added on top of HEAD's
data file)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _git_ok() -> bool:
    if shutil.which("git") is None:
        return False
    r = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True)
    return r.returncode == 0


@pytest.mark.skipif(not _git_ok(), reason="needs a git checkout")
def test_first_contact_predicts_only_new_rows_with_the_old_tree(tmp_path):
    head = yaml.safe_load(subprocess.run(["git", "show", "HEAD:benchmarks/data/throughput.yaml"], cwd=ROOT,
                                         capture_output=True, check=True).stdout.decode())
    base = head["rows"][0]
    data = dict(head)
    data["rows"] = head["rows"] + [dict(base, id="fc-test-a"),
                                   dict(base, id="fc-test-b",
                                        measured_tokens_per_s_per_gpu=2 * base["measured_tokens_per_s_per_gpu"])]
    src = tmp_path / "throughput.yaml"
    src.write_text(yaml.safe_dump(data), encoding="utf-8")
    out = tmp_path / "fc.json"
    r = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "first_contact.py"), "--since", "HEAD",
                        "--data", str(src), "--out", str(out), "--no-docs"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert [x["key"] for x in res["rows"]] == ["fc-test-a", "fc-test-b"]  # rows already at HEAD are not new
    a, b = res["rows"]
    assert a["predicted_then"] and a["predicted_then"] == b["predicted_then"]  # same configuration, same prediction
    for x in (a, b):
        assert x["error_then_pct"] == pytest.approx(100 * (x["predicted_then"] / x["published"] - 1), abs=0.1)
    # twice the published speed: the same prediction is half as large relative to it
    assert 1 + b["error_then_pct"] / 100 == pytest.approx((1 + a["error_then_pct"] / 100) / 2, abs=2e-3)
    s = res["summary_then"]
    assert s["rows"] == 2 and s["worst_row"] == max((a, b), key=lambda x: abs(x["error_then_pct"]))["key"]
    assert s["within_30_pct"] == sum(abs(x["error_then_pct"]) <= 30 for x in (a, b))
    if "p10_then" in a:  # HEAD ships speed intervals: the published figure is inside or not, as counted
        inside = sum(x["p10_then"] <= x["published"] <= x["p90_then"] for x in (a, b))
        assert s["inside_p10_p90"] == inside
