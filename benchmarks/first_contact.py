"""First contact: how the speed model did on published runs it had never seen.

    python benchmarks/first_contact.py --since cb35c9f   # writes benchmarks/results/first_contact.json and the
                                                         # "first-contact" section of docs/accuracy.md

The rows of ``benchmarks/data/throughput.yaml`` whose ``id`` is not in that file at commit ``--since`` are the
runs collected after it. Each is predicted twice:

* **then**: with the code *and* the fitted constants of ``--since``. The commit's tree is exported
  (``git archive <commit> | tar -x``) into a temporary folder and a small predictor runs there in a subprocess with
  ``PYTHONPATH=<tmp>/src``: it calls that tree's ``benchmarks/speed_loso.py`` (``load_rows`` + ``predict`` with
  ``engines.DEFAULT_CONSTANTS``, the constants that commit shipped) and, where the old code has one, its 80 %
  speed interval (``trainfit.estimate.uncertainty.speed_interval``). Row fields the old code does not know are
  ignored by it (it reads rows with ``dict.get``); a row it cannot read at all is reported with the reason.
* **now**: the same predictor on the current working tree.

Error of a row = predicted / published - 1, in per cent. The ``then`` column is the honest out-of-sample
number: neither the model's structure nor its constants could have been chosen with these rows in view. The
``now`` column includes whatever was changed after the rows arrived (refits included).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from datetime import date
from io import BytesIO
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _split import is_frozen  # noqa: E402

DATA_REL = "benchmarks/data/throughput.yaml"
OUT = HERE / "results" / "first_contact.json"

# Runs inside a tree (old or current) with that tree's src/ and benchmarks/ first on the path. It reads
# {"models", "gpus", "rows"} as JSON on stdin and prints one JSON list: per row its prediction with the tree's
# shipped constants, and the tree's 80 % interval where it has one.
PREDICTOR = r"""
import json, sys
sys.path.insert(0, "benchmarks")
import speed_loso as sl
from trainfit.estimate import engines
payload = json.load(sys.stdin)
out = []
for r in payload["rows"]:
    rec = {"id": r["id"]}
    data = {"models": {r["model"]: payload["models"][r["model"]]}, "gpus": payload["gpus"]}
    try:
        (row,) = sl.load_rows(data, [r])
        p = sl.predict(row, engines.DEFAULT_CONSTANTS)
        rec["predicted"] = p
    except Exception as exc:  # the tree's code cannot read or predict this row
        rec["error"] = repr(exc)
        out.append(rec)
        continue
    try:
        from trainfit.estimate import uncertainty
        try:  # trees before 2026-12-06 take no GPU generation
            iv = uncertainty.speed_interval(row.model, row.workload, r["engine"], row.hardware.gpu_class)
        except TypeError:
            iv = uncertainty.speed_interval(row.model, row.workload, r["engine"])
        rec.update(p10=p * iv.p10, p50=p * iv.p50, p90=p * iv.p90, interval_group=iv.group)
    except Exception as exc:  # no interval in this tree
        rec["interval_error"] = repr(exc)
    out.append(rec)
print(json.dumps(out))
"""


def git(*args: str, cwd: Path = ROOT) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True).stdout


def data_at(commit: str) -> dict:
    """``throughput.yaml`` as it was at ``commit``."""
    return yaml.safe_load(git("show", f"{commit}:{DATA_REL}").decode("utf-8"))


def new_rows(old: dict, cur: dict) -> list[dict]:
    """Rows of ``cur`` whose id ``old`` does not have (in file order)."""
    seen = {r["id"] for r in old.get("rows") or []}
    return [r for r in cur.get("rows") or [] if r["id"] not in seen]


def export_tree(commit: str, dest: Path) -> None:
    """The files of ``commit`` under ``dest`` (``git archive`` into tar, unpacked here)."""
    with tarfile.open(fileobj=BytesIO(git("archive", commit)), mode="r:") as tar:
        tar.extractall(dest, filter="data") if hasattr(tarfile, "data_filter") else tar.extractall(dest)


def run_predictor(tree: Path, payload: dict, timeout_s: int = 600) -> dict[str, dict]:
    """Predictions of the predictor run in ``tree`` (its own ``src`` on PYTHONPATH), by row id."""
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    r = subprocess.run([sys.executable, "-c", PREDICTOR], cwd=tree, env=env, input=json.dumps(payload),
                       capture_output=True, text=True, timeout=timeout_s)
    if r.returncode != 0:
        raise RuntimeError(f"predictor failed in {tree}:\n{r.stderr[-3000:]}")
    return {d["id"]: d for d in json.loads(r.stdout.strip().splitlines()[-1])}


def _err(pred: float | None, published: float) -> float | None:
    return None if pred is None else round(100.0 * (pred / published - 1.0), 1)


def summary(rows: list[dict], key: str) -> dict:
    """Median |error|, worst, within 15/30 %, signed median of ``key`` ('then' or 'now') over the rows it
    predicted; and, for 'then', how many published figures fell inside the old 80 % interval."""
    errs = [(r["key"], r[f"error_{key}_pct"]) for r in rows if r.get(f"error_{key}_pct") is not None]
    out: dict = {"rows": len(rows), "predicted": len(errs)}
    if errs:
        a = [abs(e) for _, e in errs]
        worst = max(errs, key=lambda t: abs(t[1]))
        out.update(median_abs_error_pct=round(statistics.median(a), 1), worst_abs_error_pct=round(abs(worst[1]), 1),
                   worst_row=worst[0], within_15_pct=sum(x <= 15 for x in a), within_30_pct=sum(x <= 30 for x in a),
                   signed_median_error_pct=round(statistics.median(e for _, e in errs), 1))
    with_iv = [r for r in rows if r.get(f"p10_{key}") is not None]
    if with_iv:
        out["with_interval"] = len(with_iv)
        out["inside_p10_p90"] = sum(r[f"p10_{key}"] <= r["published"] <= r[f"p90_{key}"] for r in with_iv)
    return out


def compare(since: str, data_path: Path = ROOT / DATA_REL, sources: list[str] | None = None) -> dict:
    """The first-contact report for the rows of ``data_path`` added after ``since``."""
    old = data_at(since)
    cur = yaml.safe_load(data_path.read_text(encoding="utf-8"))
    rows = [r for r in new_rows(old, cur) if not sources or r["source"] in sources]
    used = {r["model"] for r in rows}
    payload = {"models": {k: v for k, v in cur["models"].items() if k in used}, "gpus": cur["gpus"], "rows": rows}
    with tempfile.TemporaryDirectory(prefix="trainfit-first-contact-") as tmp:
        export_tree(since, Path(tmp))
        then = run_predictor(Path(tmp), payload)
    now = run_predictor(ROOT, payload)
    out_rows = []
    for r in rows:
        t, n = then.get(r["id"], {}), now.get(r["id"], {})
        pub = float(r["measured_tokens_per_s_per_gpu"])
        rec = {"key": r["id"], "source": r["source"], "split": "frozen" if is_frozen(r["source"]) else "calibration",
               "model": r["model"], "gpus": r["gpus"], "gpu": r["gpu"], "engine": r["engine"],
               "precision": r["precision"], "published": pub,
               "predicted_then": None if t.get("predicted") is None else round(t["predicted"], 1),
               "predicted_now": None if n.get("predicted") is None else round(n["predicted"], 1)}
        rec["error_then_pct"] = _err(t.get("predicted"), pub)
        rec["error_now_pct"] = _err(n.get("predicted"), pub)
        for side, d in (("then", t), ("now", n)):
            if "p10" in d:
                rec[f"p10_{side}"], rec[f"p90_{side}"] = round(d["p10"], 1), round(d["p90"], 1)
                rec[f"interval_group_{side}"] = d["interval_group"]
            if "error" in d:
                rec[f"not_predicted_{side}"] = d["error"]
        out_rows.append(rec)
    by_source = {}
    for s in sorted({r["source"] for r in out_rows}):
        sub = [r for r in out_rows if r["source"] == s]
        by_source[s] = {"split": sub[0]["split"], "then": summary(sub, "then"), "now": summary(sub, "now")}
    return {"date": date.today().isoformat(), "command": f"python benchmarks/first_contact.py --since {since}",
            "since": since, "since_full": git("rev-parse", since).decode().strip(), "data": DATA_REL,
            "error": "predicted / published - 1", "summary_then": summary(out_rows, "then"),
            "summary_now": summary(out_rows, "now"), "per_source": by_source, "rows": out_rows}


def _line(s: dict, interval: bool) -> str:
    if not s.get("predicted"):
        return "no row predicted"
    txt = (f"median |error| {s['median_abs_error_pct']} %, signed median {s['signed_median_error_pct']:+} %, worst "
           f"{s['worst_abs_error_pct']} % ({s['worst_row']}); {s['within_15_pct']}/{s['predicted']} within 15 %, "
           f"{s['within_30_pct']}/{s['predicted']} within 30 %")
    if interval and s.get("with_interval"):
        txt += f"; {s['inside_p10_p90']}/{s['with_interval']} inside the 80 % interval (p10-p90)"
    return txt


def markdown(res: dict) -> str:
    t, n = res["summary_then"], res["summary_now"]
    lines = [
        "## Speed, first contact", "",
        f"Generated {res['date']} by `{res['command']}`. The {t['rows']} runs below were added to "
        f"`{res['data']}` after commit `{res['since']}`. **Then** = predicted by the code and the fitted constants "
        f"of `{res['since']}` (its tree exported with `git archive` and run apart), before anyone could tune the "
        "model to these runs; this is the number a new user would have got. **Now** = predicted by the current "
        "code, which may since have been changed or refitted with these runs in view. Error = predicted / "
        "published - 1. Rows of one source are often one configuration at several GPU counts (weak scaling), so "
        "they are not independent runs: read the per-source lines as the count of distinct tests. A new source "
        "lands on the calibration or the frozen side by the hash rule of `benchmarks/_split.py` (column split); "
        "either way the then column was computed before any fit saw it.", "",
        f"* **First contact (then): {_line(t, True)}.**",
        f"* Now: {_line(n, True)}.", "",
        "| source | split | rows | then: median / worst / within 30 % | now: median / worst / within 30 % |",
        "|---|---|---:|---|---|",
    ]
    for s, v in res["per_source"].items():
        cells = []
        for side in ("then", "now"):
            x = v[side]
            cells.append(f"{x['median_abs_error_pct']} % / {x['worst_abs_error_pct']} % / {x['within_30_pct']}/"
                         f"{x['predicted']}" if x.get("predicted") else "-")
        lines.append(f"| {s} | {v['split']} | {v['then']['rows']} | {cells[0]} | {cells[1]} |")
    lines += ["", "| row | source | split | GPUs | precision | published tok/s/GPU | then (p10-p90) | error then | "
              "now | error now |", "|---|---|---|---:|---|---:|---:|---:|---:|---:|"]
    for r in res["rows"]:
        iv = f" ({r['p10_then']:,.0f}-{r['p90_then']:,.0f})" if r.get("p10_then") is not None else ""
        pt = f"{r['predicted_then']:,.0f}{iv}" if r["predicted_then"] is not None else "not predicted"
        pn = f"{r['predicted_now']:,.0f}" if r["predicted_now"] is not None else "not predicted"
        et = f"{r['error_then_pct']:+.1f} %" if r["error_then_pct"] is not None else "-"
        en = f"{r['error_now_pct']:+.1f} %" if r["error_now_pct"] is not None else "-"
        lines.append(f"| {r['key']} | {r['source']} | {r['split']} | {r['gpus']} x {r['gpu']} | {r['precision']} | "
                     f"{r['published']:,.0f} | {pt} | {et} | {pn} | {en} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--since", required=True, help="commit whose code and constants predict the newer rows")
    ap.add_argument("--data", type=Path, default=ROOT / DATA_REL, help="current data file (default: the repo's)")
    ap.add_argument("--source", action="append", help="only rows of this source (repeatable)")
    ap.add_argument("--out", type=Path, default=OUT, help="JSON report path")
    ap.add_argument("--no-docs", action="store_true", help="do not write the docs/accuracy.md section")
    args = ap.parse_args(argv)
    res = compare(args.since, args.data, args.source)
    md = markdown(res)
    print(md)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    if not args.no_docs:
        from _docsections import replace_section

        replace_section("first-contact", md)
    print(f"wrote {args.out}" + ("" if args.no_docs else " and docs/accuracy.md"), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
