"""Check the public sizing claims C1..C26 with trainfit and write docs/claims.md (+ benchmarks/results/claims.json).

Run: python benchmarks/claims.py [--out docs/claims.md] [--json-out benchmarks/results/claims.json]
                                 [--claims PATH] [--facts PATH] [--only C6,C22] [--inprocess]

For every claim of shared/reference/claims.md this script runs trainfit commands (a fresh
``python -m trainfit.cli ... --json`` process each, or ``main()`` in this process with ``--inprocess``; bundled
catalog only: no user overlay, no refresh cache), derives a verdict (true / false / partly / not checkable) and a
one-line reason from the JSON, and writes the commands, the key numbers and the verdicts to docs/claims.md and a
machine-readable digest to benchmarks/results/claims.json. Nothing here hard-codes a memory, speed, price or rule
number: change trainfit and rerun, and the document follows. tests/test_claims.py regenerates both in-process and
fails when the committed files are stale.

Instance-type names are checked against ``trainfit catalog show instances`` and against the spec-name
verdicts of shared/reference/pai-facts.md (section 7, "Claim (f)").
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "reference"
CLAIMS_MD = SHARED / "claims.md"
FACTS_MD = SHARED / "pai-facts.md"
OUT_MD = ROOT / "docs" / "claims.md"
OUT_JSON = ROOT / "benchmarks" / "results" / "claims.json"

TRUE, FALSE, PARTLY, NA = "true", "false", "partly", "not checkable"
#: Job length for `plan` when a claim is about fit and speed: short enough that the planner's wall-clock limit
#: (14 days by default) rejects no configuration, so a slow-but-fitting layout is still shown with its tokens/s.
TOKENS = "10M"
#: Job length where hours matter (spot interruptions, checkpoint interval).
TOKENS_JOB = "1B"


# --------------------------------------------------------------------------------------------------
# running trainfit


@dataclass
class Out:
    """One trainfit call: the command as a user would type it, its exit code and parsed JSON."""

    cmd: str
    rc: int
    data: Any

    @property
    def error(self) -> dict | None:
        return self.data.get("error") if isinstance(self.data, dict) else None


class Runner:
    """Runs ``trainfit ARGS --json``: a subprocess each (default) or in-process (tests); memoised."""

    def __init__(self, inprocess: bool = False):
        self.inprocess = inprocess
        self._cache: dict[tuple[str, ...], Out] = {}
        self._env: dict[str, str] | None = None
        self._tmp: tempfile.TemporaryDirectory | None = None

    def _subprocess_env(self) -> dict[str, str]:
        if self._env is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="trainfit-claims-")
            env = dict(os.environ)
            for k in USER_FILES_ENV:
                env.pop(k, None)
            env["XDG_CONFIG_HOME"] = str(Path(self._tmp.name) / "config")  # no user overlay
            env["XDG_CACHE_HOME"] = str(Path(self._tmp.name) / "cache")  # no refresh cache
            self._env = env
        return self._env

    def __call__(self, *args: str) -> Out:
        argv = tuple(str(a) for a in args) + ("--json",)
        if argv in self._cache:
            return self._cache[argv]
        cmd = "trainfit " + shlex.join(argv)
        if self.inprocess:
            from trainfit.cli import main

            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    rc = main(list(argv))
                except SystemExit as e:  # pragma: no cover - main() returns argparse's code itself
                    rc = e.code if isinstance(e.code, int) else 2
            text, errtext = out.getvalue(), err.getvalue()
        else:
            r = subprocess.run([sys.executable, "-m", "trainfit.cli", *argv], capture_output=True, text=True,
                               env=self._subprocess_env())
            rc, text, errtext = r.returncode, r.stdout, r.stderr
        if not text.strip():
            last = (errtext.strip().splitlines() or [""])[-1]
            text = json.dumps({"error": {"code": "no-output", "message": last[-500:], "fix": ""}})
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = {"error": {"code": "bad-json", "message": text[-500:], "fix": ""}}
        res = Out(cmd, rc, data)
        self._cache[argv] = res
        return res

    def version(self) -> str:
        if self.inprocess:
            from trainfit import __version__

            return __version__
        r = subprocess.run([sys.executable, "-m", "trainfit.cli", "--version"], capture_output=True, text=True,
                           env=self._subprocess_env())
        return r.stdout.strip() or "unknown"


#: Variables that point trainfit at the user's own files (catalog overlay, refresh caches, speed calibration): unset
#: for every run here, whose XDG folders are empty temporary ones.
USER_FILES_ENV = ("TRAINFIT_CATALOG_OVERLAY", "TRAINFIT_CACHE_DIR", "TRAINFIT_CALIBRATION")


@contextlib.contextmanager
def isolated_catalog():
    """In-process runs: the bundled catalog only, as the subprocess runs get (no user overlay, no refresh cache, no
    speed calibration)."""
    from trainfit.catalog import _store, set_overlay_path

    keys = ("XDG_CONFIG_HOME", "XDG_CACHE_HOME") + USER_FILES_ENV
    saved = {k: os.environ.get(k) for k in keys}
    with tempfile.TemporaryDirectory(prefix="trainfit-claims-") as tmp:
        for k in USER_FILES_ENV:
            os.environ.pop(k, None)
        os.environ["XDG_CONFIG_HOME"] = str(Path(tmp) / "config")
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        set_overlay_path(None)
        _store.reset_cache()
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            _store.reset_cache()


# --------------------------------------------------------------------------------------------------
# a claim's result


@dataclass
class Result:
    id: str
    verdict: str
    why: str
    commands: list[str] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)  # key numbers, markdown bullets
    sources: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # trainfit commands that failed unexpectedly
    numbers: dict[str, Any] = field(default_factory=dict)  # key numbers for benchmarks/results/claims.json

    def digest(self) -> dict[str, Any]:
        """The machine-readable record of this claim (benchmarks/results/claims.json)."""
        return {"id": self.id, "verdict": self.verdict, "why": self.why, "numbers": self.numbers,
                "commands": self.commands, "errors": self.errors}


class Ctx:
    """What an evaluator sees: a recording runner and the reference texts."""

    def __init__(self, runner: Runner, facts_text: str):
        self.runner = runner
        self.facts_text = facts_text
        self.commands: list[str] = []
        self.errors: list[str] = []

    def run(self, *args: str, expect_error: bool = False) -> Out:
        out = self.runner(*args)
        if out.cmd not in self.commands:
            self.commands.append(out.cmd)
        if out.error and not expect_error:
            self.errors.append(f"`{out.cmd}` → {out.error.get('code')}: {out.error.get('message')}")
        return out

    # ---- helpers over trainfit outputs

    def memory(self, model: str, *opts: str) -> dict:
        return self.run("memory", model, *opts).data

    def plan(self, model: str, *opts: str, tokens: str = TOKENS) -> dict:
        args = ("plan", model, "--tokens", tokens, *opts)
        if "--spot" in opts:
            args = self._spot_args(args)
        d = self.run(*args).data
        if not isinstance(d, dict) or "plans" not in d:
            return {"plans": [], "rejected": [], "error": (d or {}).get("error") if isinstance(d, dict) else d}
        return d

    def _spot_args(self, args: tuple[str, ...]) -> tuple[str, ...]:
        """``--spot`` as the README writes it; when this trainfit's parser wants a value (``--spot true``), say so
        under "Unexpected trainfit errors" and run the form it accepts."""
        probe = self.runner(*args)
        msg = (probe.error or {}).get("message") or ""
        if probe.error and probe.error.get("code") == "no-output" and "--spot" in msg:
            self.errors.append(f"`{probe.cmd}` \u2192 {msg} (README and docs/launch.md write `--spot` as a flag); "
                               "ran `--spot true` instead")
            i = args.index("--spot")
            return args[:i + 1] + ("true",) + args[i + 1:]
        return args

    def gpus(self) -> dict[str, dict]:
        d = self.run("catalog", "show", "gpus").data
        table: dict[str, dict] = {}
        for g in d if isinstance(d, list) else []:
            table[g["name"]] = g
        return table

    def instances(self) -> dict[str, dict]:
        d = self.run("catalog", "show", "instances").data
        return {i["instance_type"]: i for i in d} if isinstance(d, list) else {}

    def rules(self, claim: str | None = None) -> list[dict]:
        d = self.run("catalog", "rules", *(("--claim", claim) if claim else ())).data
        return d if isinstance(d, list) else []

    def instance_check(self, name: str) -> dict:
        """Is ``name`` in trainfit's catalog, and what does pai-facts.md say about it?"""
        cat = self.instances()
        status, line = facts_status(self.facts_text, name)
        return {"name": name, "in_catalog": name in cat, "entry": cat.get(name), "facts": status,
                "facts_line": line}


def facts_status(text: str, name: str) -> tuple[str, str | None]:
    """The spec-name verdict of pai-facts.md for ``name``: 'real', 'not found', 'mentioned' or 'absent'."""
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("- ") and f"`{name}`" in s:
            m = re.search(r"\*\*(real|not found)\*\*", s)
            if m:
                return m.group(1), _plain(s[2:])
    return ("mentioned", None) if name in text else ("absent", None)


def _plain(s: str) -> str:
    return s.replace("**", "")


def name_fact(chk: dict) -> str:
    cat = "in trainfit's catalog" if chk["in_catalog"] else "not in trainfit's catalog"
    where = {"real": "pai-facts.md: real", "not found": "pai-facts.md: not found",
             "mentioned": "pai-facts.md mentions it", "absent": "pai-facts.md: no mention"}[chk["facts"]]
    line = f"`{chk['name']}`: {cat}; {where}"
    if chk["facts_line"]:
        line += f" (\u201c{chk['facts_line']}\u201d)"
    if chk["entry"]:
        e = chk["entry"]
        line += f"; catalog: GPU {e.get('gpu') or 'unknown'} \u00d7 {e.get('gpu_count') or '?'}"
    return line


def name_problem(chk: dict) -> str:
    if chk["facts"] == "not found":
        return f"{chk['name']} does not exist (pai-facts.md: not found)"
    return f"{chk['name']} is not a known instance type"


def name_ok(chk: dict) -> bool:
    return chk["in_catalog"] or chk["facts"] == "real"


def g(x: float | None, nd: int = 1) -> str:
    return "?" if x is None else f"{x:,.{nd}f}"


def pct_range(xs: list[float]) -> str:
    lo, hi = f"{min(xs):.0%}", f"{max(xs):.0%}"
    return lo if lo == hi else f"{lo}\u2013{hi}"


def best(plans: list[dict]) -> dict | None:
    return plans[0] if plans else None


def days_per_b(tokens_per_s: float | None) -> str:
    """Days to train 1B tokens at ``tokens_per_s`` (the planner's own hours are for the ``--tokens`` asked)."""
    return "?" if not tokens_per_s else f"{1e9 / tokens_per_s / 86400:,.1f}"


def plan_line(p: dict) -> str:
    s = p["settings"]
    strat = s["strategy"] + (f"+offload {s['offload']}" if s["offload"] != "none" else "")
    if s.get("ep", 1) > 1:
        strat += f", EP {s['ep']}"
    return (f"{p['instance_type']} ({p['gpu']}) \u00d7 {p['nodes']} node(s), {s['gpus']} GPUs, {s['precision']}, "
            f"{strat}, GC {'on' if s['grad_ckpt'] else 'off'}, micro-batch {s['micro_batch']}: "
            f"{g(p['per_gpu_gib'])} GiB/GPU of {g(p['gpu_mem_gib'])} (verdict {p['verdict']}), host RAM "
            f"{g(p['host_ram_gib'])} GiB/node, {g(p['tokens_per_s'], 0)} tokens/s "
            f"({days_per_b(p['tokens_per_s'])} days per 1B tokens), MFU {g(p['mfu'], 3)}")


def spot_consistency(ctx: "Ctx", p: dict) -> bool:
    """Cross-check a spot plan against docs/cost-model.md: expected interruptions = rate x nodes x expected hours
    (losing any node stops the job). A mismatch is listed under "Unexpected trainfit errors"."""
    from trainfit.plan.cost import INTERRUPTION_RATE_PER_NODE_HOUR_DEFAULT as rate

    n = p.get("expected_interruptions")
    if n is None or not p.get("hours"):
        return True
    want = rate * p["nodes"] * p["hours"]
    if abs(n - want) > 0.05 * max(want, 1e-9):
        ctx.errors.append(f"inconsistent spot numbers for {p['instance_type']} \u00d7 {p['nodes']} node(s): "
                          f"expected_interruptions {n:.1f}, but {rate:g}/node-hour \u00d7 {p['nodes']} node(s) \u00d7 "
                          f"{p['hours']:.1f} h = {want:.1f} (docs/cost-model.md: lambda = instances \u00d7 rate); "
                          f"{n / want:.0f}\u00d7 as many, i.e. one instance per GPU")
        return False
    return True


def rej_line(r: dict) -> str:
    return f"{r['instance_type']}: {r['code']}: {r['reason']}"


def gpu_verdict(d: dict) -> str | None:
    """``fits`` / ``tight`` / ``oom`` for GPU memory alone (memory --json with a GPU), None without a GPU."""
    return (d.get("fit") or {}).get("gpu_verdict") if isinstance(d, dict) else None


def mem_line(d: dict) -> str:
    if "error" in d:
        return f"error: {d['error'].get('message')}"
    s = f"reserved {g(d['reserved_gib'])} GiB/GPU (peak in {d['peak_phase']})"
    if d.get("gpu"):
        fit = d.get("fit") or {}
        s += (f" on {d['gpu']} (usable {g(d['gpu_mem_gib'])} GiB): verdict {d['verdict']} (GPU memory "
              f"{fit.get('gpu_verdict')}, host RAM {fit.get('host_verdict')}: needs "
              f"{g(fit.get('host_ram_need_gib'), 0)}"
              f" GiB/node)")
    return s


def mem_rejections(d: dict) -> list[dict]:
    return [r for r in d.get("rejected", []) if r["code"] == "memory"]


def short_reason(r: dict) -> str:
    return re.sub(r"\s*\(best try.*\)$", "", r["reason"])


def offloads(p: dict) -> bool:
    return p["settings"]["offload"] != "none"


# --------------------------------------------------------------------------------------------------
# evaluators

EVALUATORS: dict[str, Callable[[Ctx], Result]] = {}


def claim(cid: str):
    def deco(fn: Callable[[Ctx], Result]):
        EVALUATORS[cid] = fn
        return fn
    return deco


@claim("C1")
def c1(ctx: Ctx) -> Result:
    facts, worst, fails = [], None, []
    for model in ("Qwen3-0.6B", "Qwen3-1.7B", "Qwen3-4B"):
        for method in ("lora", "qlora"):
            for gpu in ("A10", "L4"):
                d = ctx.memory(model, "--method", method, "--gpu", gpu)
                if "error" in d:
                    fails.append(f"{model} {method} {gpu}: error")
                    continue
                if d["verdict"] != "fits":
                    fails.append(f"{model} {method} on {gpu}: {d['verdict']} ({g(d['reserved_gib'])} of "
                                 f"{g(d['gpu_mem_gib'])} GiB)")
                if worst is None or d["reserved_gib"] > worst[0]["reserved_gib"]:
                    worst = (d, model, method, gpu)
                facts.append(f"{model} {method} on {gpu}: {g(d['reserved_gib'])} GiB of {g(d['gpu_mem_gib'])} usable, "
                             f"verdict {d['verdict']}; longest sequence at micro-batch 1: {d.get('max_seq_len'):,}")
    if fails or worst is None:
        return Result("C1", FALSE, "; ".join(fails) or "no estimate", facts=facts)
    d, model, method, gpu = worst
    why = (f"all 12 cases fit at seq 2048; the largest, {model} {method} on {gpu}, needs {g(d['reserved_gib'])} GiB "
           f"of {g(d['gpu_mem_gib'])} usable (longest sequence {d['max_seq_len']:,})")
    return Result("C1", TRUE, why, facts=facts,
                  numbers={"largest_case": f"{model} {method} {gpu}",
                           "largest_reserved_gib": round(d["reserved_gib"], 2),
                           "usable_gib": d["gpu_mem_gib"], "max_seq_len": d["max_seq_len"]})


def _fit_case(ctx: Ctx, model: str, gpu: str, gpus: int, precision: str) -> dict:
    hw = ["--gpu", gpu, "--gpus", str(gpus), "--gpus-per-node", str(gpus)]
    opts = ["--method", "full", *hw, "--precision", precision, "--grad-ckpt"]
    free = ctx.plan(model, *opts)
    plain = ctx.plan(model, *opts, "--offload", "none")
    return {"model": model, "gpu": gpu, "gpus": gpus, "precision": precision, "opts": opts,
            "no_offload": best(plain["plans"]), "any": best(free["plans"]),
            "rej": free["rejected"], "rej_plain": mem_rejections(plain)}


@claim("C2")
def c2(ctx: Ctx) -> Result:
    facts, states, host, slow, nums = [], [], [], [], {}
    for model in ("Qwen3-8B", "Qwen3-14B"):
        for gpu, n, prec in (("A10", 2, "amp-bf16"), ("V100-32GB", 1, "fp16")):
            c = _fit_case(ctx, model, gpu, n, prec)
            label = f"{model} full on {n}\u00d7{gpu} ({prec}, GC on)"
            key = f"{model} {n}x{gpu}"
            if c["no_offload"]:
                states.append("fits")
                p = c["no_offload"]
                facts.append(f"{label}: fits without offload: {plan_line(p)}")
            elif c["any"]:
                states.append("offload")
                p = c["any"]
                host.append(p["host_ram_gib"])
                slow.append(1e9 / p["tokens_per_s"] / 86400)
                no = c["rej_plain"][0] if c["rej_plain"] else None
                facts.append(f"{label}: fits only with CPU offload: {plan_line(p)}"
                             + (f"; without offload {short_reason(no)}" if no else ""))
            else:
                states.append("no")
                p = None
                codes = sorted({r["code"] for r in c["rej"]})
                facts.append(f"{label}: no plan; rejections: " + "; ".join(rej_line(r) for r in c["rej"]
                                                                            if r["code"] != "layout")
                             + f" (codes: {', '.join(codes)})")
            nums[key] = {"state": states[-1], "per_gpu_gib": None if p is None else round(p["per_gpu_gib"], 2),
                         "host_ram_gib": None if p is None else p["host_ram_gib"],
                         "tokens_per_s": None if p is None else round(p["tokens_per_s"])}
    if all(s == "fits" for s in states):
        return Result("C2", TRUE, "all four cases fit with AMP + GC alone", facts=facts, numbers=nums)
    if any(s != "no" for s in states):
        n_off, n_no, alone = states.count("offload"), states.count("no"), states.count("fits")
        why = f"AMP + GC alone fits {alone} of 4 cases"
        if n_off:
            why += (f"; {n_off} fit only with CPU offload ({g(min(host), 0)}+ GiB host RAM, "
                    f"{g(min(slow), 1)}\u2013{g(max(slow), 1)} days per 1B tokens)")
        if n_no:
            why += f"; {n_no} do not fit at all"
        return Result("C2", PARTLY, why, facts=facts, numbers=nums)
    return Result("C2", FALSE, "none of the four cases fits, even with ZeRO-3 + offload", facts=facts, numbers=nums)


PRECISIONS_C3 = ("bf16", "amp-bf16")  # pure bf16 (trainfit's default) and AMP with fp32 master weights


def _mem_gb(gpus: dict, name: str) -> float | None:
    return gpus.get(name, {}).get("mem_gib")


def _same_layout_other_precision(ctx: Ctx, model: str, p: dict, precision: str) -> dict:
    """``trainfit memory`` of plan ``p``'s exact layout, with another precision (both numbers side by side)."""
    s = p["settings"]
    return ctx.memory(model, "--method", "full", "--gpu", p["gpu"], "--gpus", str(s["gpus"]), "--gpus-per-node",
                      str(s["gpus_per_node"]), "--strategy", s["strategy"], "--offload", s["offload"],
                      "--ep", str(s.get("ep", 1)), "--micro-batch", str(s["micro_batch"]),
                      "--grad-ckpt" if s["grad_ckpt"] else "--no-grad-ckpt", "--precision", precision)


def _node_study(ctx: Ctx, model: str, precision: str, gpus: dict, insts: dict) -> dict:
    """What one 8-GPU node (and one GPU) can do for ``model`` full training under ``precision``."""
    one = ctx.plan(model, "--method", "full", "--gpus", "1", "--offload", "none", "--precision", precision,
                   "--top", "50")
    node = ctx.plan(model, "--method", "full", "--gpus", "8", "--gpus-per-node", "8", "--precision", precision,
                    "--top", "50")["plans"]
    # what fits without offload is asked with --offload none: left free, the planner may prefer offload on a card
    # where the plain layout fits but above its P(OOM) limit (plan.rank.PLAN_OOM_LIMIT)
    plain = [p for p in ctx.plan(model, "--method", "full", "--gpus", "8", "--gpus-per-node", "8", "--offload", "none",
                                 "--precision", precision, "--top", "50")["plans"] if not offloads(p)]
    small = sorted(plain, key=lambda p: (_mem_gb(gpus, p["gpu"]) or 1e9, p["per_gpu_gib"]))
    small_any = sorted(node, key=lambda p: (_mem_gb(gpus, p["gpu"]) or 1e9, offloads(p), p["per_gpu_gib"]))
    pcie = [p for p in plain if insts.get(p["instance_type"], {}).get("intra_node_link") in ("pcie", "none")]
    under80 = sorted({p["gpu"] for p in plain if (_mem_gb(gpus, p["gpu"]) or 1e9) < 80})
    return {"precision": precision, "one_gpu": best(one["plans"]), "node": bool(plain), "node_any": bool(node),
            "smallest": small[0] if small else None, "smallest_any": small_any[0] if small_any else None,
            "under80": under80, "pcie": pcie[0] if pcie else None}


def _study_numbers(st: dict, gpus: dict) -> dict:
    sm = st["smallest"]
    return {"one_gpu_without_offload": st["one_gpu"] is not None, "one_node_without_offload": st["node"],
            "smallest_gpu_one_node": None if sm is None else sm["gpu"],
            "smallest_gpu_mem_gib": None if sm is None else _mem_gb(gpus, sm["gpu"]),
            "smallest_per_gpu_gib": None if sm is None else round(sm["per_gpu_gib"], 2),
            "gpus_under_80gb_that_fit": st["under80"], "pcie_node_fits": st["pcie"] is not None}


def _precision_pair(ctx: Ctx, model: str, st: dict, other: str, gpus: dict) -> str | None:
    """"same layout, other precision" line for the smallest GPU that fits one node under ``st``'s precision."""
    p = st["smallest"]
    if p is None:
        return None
    m = _same_layout_other_precision(ctx, model, p, other)
    if "error" in m:
        return None
    return (f"{model} on one 8\u00d7{p['gpu']} node ({g(_mem_gb(gpus, p['gpu']), 0)} GB), "
            f"{p['settings']['strategy']}, GC {'on' if p['settings']['grad_ckpt'] else 'off'}, micro-batch "
            f"{p['settings']['micro_batch']}: {st['precision']} {g(p['per_gpu_gib'])} GiB/GPU (fits); same layout "
            f"under {other}: {g(m['reserved_gib'])} GiB/GPU (GPU memory {gpu_verdict(m)})")


def _by_precision(items: dict[str, Any], fmt: Callable[[Any], str]) -> str:
    vals = {pr: fmt(v) for pr, v in items.items()}
    if len(set(vals.values())) == 1:
        return next(iter(vals.values())) + " under both pure bf16 and amp-bf16"
    return "; ".join(f"{pr}: {v}" for pr, v in vals.items())


@claim("C3")
def c3(ctx: Ctx) -> Result:
    gpus = ctx.gpus()
    insts = ctx.instances()
    facts, studies, nums = [], {}, {}
    e = ctx.run("memory", "Qwen3-72B", expect_error=True)
    no72 = bool(e.error and e.error.get("code") == "unknown-model")
    if no72:
        facts.append(f"Qwen3-72B: {e.error['message']} (there is no Qwen3-72B; the largest dense Qwen3 is 32B)")
    for model in ("Qwen3-32B", "Qwen3-30B-A3B"):
        for pr in PRECISIONS_C3:
            st = studies[(model, pr)] = _node_study(ctx, model, pr, gpus, insts)
            nums[f"{model} {pr}"] = _study_numbers(st, gpus)
            facts.append(f"{model}, {pr}: one GPU without offload: "
                         + (plan_line(st["one_gpu"]) if st["one_gpu"] else "no plan (multi-GPU needed)"))
            facts.append(f"{model}, {pr}: one 8-GPU node without offload, smallest GPU: "
                         + (plan_line(st["smallest"]) if st["smallest"] else "none fits")
                         + f"; GPUs under 80 GB that fit: {', '.join(st['under80']) or 'none'}")
            if st["pcie"]:
                facts.append(f"{model}, {pr}: a PCIe-only node (no NVLink) fits: {plan_line(st['pcie'])}")
        for pr, other in zip(PRECISIONS_C3, reversed(PRECISIONS_C3)):
            line = _precision_pair(ctx, model, studies[(model, pr)], other, gpus)
            if line:
                facts.append(line)
    by_pr = {pr: [studies[(m, pr)] for m in ("Qwen3-32B", "Qwen3-30B-A3B")] for pr in PRECISIONS_C3}
    multi = all(st["one_gpu"] is None for sts in by_pr.values() for st in sts)
    parts = ["multi-GPU: needed under both pure bf16 and amp-bf16" if multi else "multi-GPU: not always needed"]
    parts.append("multi-node/RDMA: " + _by_precision(
        {pr: all(st["node"] for st in sts) for pr, sts in by_pr.items()},
        lambda ok: "not needed (one 8-GPU node fits both models)" if ok else "needed for at least one model"))
    parts.append("80 GB A100/H100: " + _by_precision(
        {pr: sorted({x for st in sts for x in st["under80"]}) for pr, sts in by_pr.items()},
        lambda xs: f"not needed (one node of {', '.join(xs)} fits)" if xs else "needed (no smaller GPU fits one node)"))
    parts.append("NVLink: " + _by_precision(
        {pr: any(st["pcie"] for st in sts) for pr, sts in by_pr.items()},
        lambda ok: "not needed (a PCIe-only node fits)" if ok else "no PCIe-only node fits"))
    if no72:
        parts.append("no Qwen3-72B exists")
    relaxed = {pr: any(st["node"] or st["under80"] or st["pcie"] for st in sts) for pr, sts in by_pr.items()}
    if multi and not any(relaxed.values()):
        verdict = TRUE
    else:
        verdict = PARTLY if multi else FALSE
    return Result("C3", verdict, "; ".join(parts), facts=facts, numbers=nums)


def _min_gpus_no_offload(ctx: Ctx, model: str, gpu: str, candidates=(8, 16, 24, 32, 40, 48, 56, 64),
                         ) -> tuple[int | None, dict | None, dict | None]:
    """Fewest GPUs (multiples of 8, nodes of 8) that fit ``model`` full on ``gpu`` without offload."""
    last_rej = None
    for n in candidates:
        d = ctx.plan(model, "--method", "full", "--gpu", gpu, "--gpus", str(n), "--gpus-per-node", "8",
                     "--offload", "none")
        if d["plans"]:
            return n, d["plans"][0], last_rej
        r = mem_rejections(d)
        if r:
            last_rej = {"gpus": n, **r[-1]}
    return None, None, last_rej


@claim("C4")
def c4(ctx: Ctx) -> Result:
    model = "Qwen3-235B-A22B"
    facts = []
    chk = ctx.instance_check("ml.gx8xf.8xlarge-gu108")
    facts.append(name_fact(chk))
    d16 = ctx.plan(model, "--method", "full", "--gpu", "A100-80GB", "--gpus", "16", "--gpus-per-node", "8")
    p16 = best(d16["plans"])
    facts.append(f"{model} full on 16\u00d7A100-80GB (2 nodes): "
                 + (plan_line(p16) if p16 else "; ".join(rej_line(r) for r in mem_rejections(d16)) or "no plan"))
    n, pmin, rej = _min_gpus_no_offload(ctx, model, "A100-80GB")
    if rej:
        facts.append(f"largest GPU count that does not fit without offload: {rej['gpus']} ({short_reason(rej)})")
    if pmin:
        facts.append(f"fewest A100-80GB GPUs without offload: {n}: {plan_line(pmin)}")
    facts.append("RL (ChatLearn: actor, critic, reference, reward, rollout engine) is not modelled by trainfit")
    bits = []
    if p16 and offloads(p16):
        bits.append(f"16\u00d7A100-80GB fits only with {p16['settings']['strategy']}+{p16['settings']['offload']} "
                    f"offload ({g(p16['host_ram_gib'], 0)} GiB host RAM/node"
                    + (f", node RAM unknown: verdict {p16['verdict']}" if p16["verdict"] != "fits" else "") + ")")
    elif p16:
        bits.append("16\u00d7A100-80GB fits without offload")
    else:
        bits.append("16\u00d7A100-80GB does not fit")
    if n:
        bits.append(f"without offload \u2265 {n} GPUs")
    if not name_ok(chk):
        bits.append(name_problem(chk))
    bits.append("RL not checkable")
    ok = p16 is not None and not offloads(p16) and name_ok(chk)
    return Result("C4", TRUE if ok else PARTLY if p16 else FALSE, "; ".join(bits), facts=facts)


@claim("C5")
def c5(ctx: Ctx) -> Result:
    facts = []
    chk = ctx.instance_check("ml.gn7i.2xlarge")
    facts.append(name_fact(chk))
    m = ctx.memory("Qwen3-4B", "--method", "lora", "--gpu", "A10")
    facts.append(f"Qwen3-4B LoRA on one A10: {mem_line(m)}")
    d = ctx.plan("Qwen3-4B", "--method", "lora", "--provider", "alibaba", "--resource-class", "pai-public",
                 "--gpu", "A10")
    p = best(d["plans"])
    if p:
        facts.append(f"PAI public resources, A10: {plan_line(p)}"
                     + (f"; warnings: {'; '.join(p['warnings'])}" if p["warnings"] else ""))
    facts.append("torch.compile: outside trainfit's model (not checkable)")
    fits = "error" not in m and m["fits"]
    bits = [f"4B LoRA fits one A10 ({g(m.get('reserved_gib'))} of {g(m.get('gpu_mem_gib'))} GiB)" if fits
            else "4B LoRA does not fit an A10"]
    if p:
        bits.append(f"PAI public type is {p['instance_type']}")
    if not name_ok(chk):
        bits.append(name_problem(chk))
    bits.append("torch.compile not checkable")
    verdict = TRUE if fits and name_ok(chk) else PARTLY if fits else FALSE
    return Result("C5", verdict, "; ".join(bits), facts=facts)


@claim("C6")
def c6(ctx: Ctx) -> Result:
    facts = []
    chk = ctx.instance_check("ml.gn8v.4xlarge")
    facts.append(name_fact(chk))
    hw = ["--gpu", "A100-80GB", "--gpus", "2", "--gpus-per-node", "2"]
    m = ctx.memory("Qwen3-14B", "--method", "full", "--gpu", "A100-80GB", "--gpus", "2", "--strategy", "zero2")
    facts.append(f"Qwen3-14B full, ZeRO-2, 2\u00d7A100-80GB: {mem_line(m)}; terms "
                 + ", ".join(f"{k} {g(v)}" for k, v in m.get("breakdown_gib", {}).items() if v))
    z2 = ctx.plan("Qwen3-14B", "--method", "full", *hw, "--strategy", "zero2", "--offload", "none")
    for r in mem_rejections(z2)[:1]:
        facts.append("plan, ZeRO-2 pinned: " + rej_line(r))
    free = best(ctx.plan("Qwen3-14B", "--method", "full", *hw)["plans"])
    off = best(ctx.plan("Qwen3-14B", "--method", "full", *hw, "--strategy", "zero2", "--offload", "optimizer")["plans"])
    speeds = []
    if free:
        facts.append(f"best plan on 2\u00d7A100-80GB: {plan_line(free)}")
        speeds.append(free["tokens_per_s"])
    if off:
        facts.append(f"ZeRO-2 + optimizer offload on 2\u00d7A100-80GB: {plan_line(off)}")
        speeds.append(off["tokens_per_s"])
    z2_fits = "error" not in m and m["fits"]
    bits = []
    bits.append(f"ZeRO-2 {'fits' if z2_fits else 'does not fit'}: needs {g(m.get('reserved_gib'))} GiB/GPU > "
                f"{g(m.get('gpu_mem_gib'), 0)}" if not z2_fits else "ZeRO-2 fits")
    if speeds:
        lo, hi = min(speeds), max(speeds)
        bits.append(f"feasible configs run {g(lo, 0)}\u2013{g(hi, 0)} tokens/s, not 120")
    if not name_ok(chk):
        bits.append(name_problem(chk))
    claimed_speed_ok = any(0.5 <= 120 / s <= 2 for s in speeds) if speeds else False
    verdict = TRUE if z2_fits and name_ok(chk) and claimed_speed_ok else FALSE
    return Result("C6", verdict, "; ".join(bits), facts=facts)


@claim("C7")
def c7(ctx: Ctx) -> Result:
    facts = []
    chk = ctx.instance_check("ml.gx8xf.8xlarge-gu108")
    facts.append(name_fact(chk))
    hw = ["--gpu", "A100-80GB", "--gpus", "8", "--gpus-per-node", "8"]
    p = best(ctx.plan("Qwen3-30B-A3B", "--method", "full", *hw)["plans"])
    facts.append("Qwen3-30B-A3B full on 8\u00d7A100-80GB (one node): " + (plan_line(p) if p else "no plan"))
    ds = best(ctx.plan("Qwen3-30B-A3B", "--method", "full", *hw, "--framework", "deepspeed")["plans"])
    if ds:
        facts.append("same with the DeepSpeed efficiency profile (`--framework deepspeed`): " + plan_line(ds))
    bits = [("fits one 8\u00d7A100-80GB node: " + f"{g(p['per_gpu_gib'])} GiB/GPU, {g(p['tokens_per_s'], 0)} tokens/s")
            if p else "does not fit 8\u00d7A100-80GB"]
    if not name_ok(chk):
        bits.append(name_problem(chk))
    verdict = TRUE if p and name_ok(chk) else PARTLY if p else FALSE
    return Result("C7", verdict, "; ".join(bits), facts=facts)


@claim("C8")
def c8(ctx: Ctx) -> Result:
    facts = []
    chk = ctx.instance_check("ml.gx8xf.16xlarge-gu108")
    facts.append(name_fact(chk))
    facts.append("RL (ChatLearn) memory and speed are not modelled by trainfit; for full training of "
                 "Qwen3-235B-A22B on 2 nodes of 8 A100-80GB see C4")
    rules = {r["id"]: r for r in ctx.rules()}
    for rid in ("multinode-without-rdma", "lingjun-needs-vpc"):
        if rid in rules:
            r = rules[rid]
            facts.append(f"rule `{rid}` ({r['severity']}): {r['title']}. Source: {r['source']}")
    facts.append("shared OSS bucket: pai-facts.md \u00a74 says AliyunPAIDLCDefaultRole can only reach the "
                 "workspace's default OSS bucket")
    if name_ok(chk):
        return Result("C8", NA, "RL sizing is outside trainfit's model", facts=facts)
    return Result("C8", FALSE, f"{name_problem(chk)}; the RL sizing itself is not checkable", facts=facts)


@claim("C9")
def c9(ctx: Ctx) -> Result:
    facts, nums = [], {}
    gpus = ctx.gpus()
    insts = ctx.instances()
    model = "Qwen3-30B-A3B"
    name = "ml.gu7xf.8xlarge-gu108"
    chk = ctx.instance_check(name)
    facts.append(name_fact(chk))
    d = ctx.plan(model, "--method", "full", "--instance-type", name)
    unknown = [r for r in d["rejected"] if r["code"] in ("unknown-gpu", "unknown-gpu-memory")]
    if unknown:
        facts.append("plan on it: " + rej_line(unknown[0]))
    m = ctx.memory(model, "--method", "full")
    prm = m.get("params", {})
    facts.append(f"{model} full: trainable {prm.get('trainable', 0):,} of {prm.get('total', 0):,} parameters "
                 f"(active per token {prm.get('active', 0):,})")
    studies = {pr: _node_study(ctx, model, pr, gpus, insts) for pr in PRECISIONS_C3}
    for pr, st in studies.items():
        nums[pr] = _study_numbers(st, gpus)
        facts.append(f"{pr}: smallest-memory GPU that fits one 8-GPU node without offload: "
                     + (plan_line(st["smallest"]) if st["smallest"] else "none"))
        if st["smallest_any"] is not None and st["smallest_any"] is not st["smallest"]:
            facts.append(f"{pr}: smallest-memory GPU with CPU offload: {plan_line(st['smallest_any'])}")
    for pr, other in zip(PRECISIONS_C3, reversed(PRECISIONS_C3)):
        line = _precision_pair(ctx, model, studies[pr], other, gpus)
        if line:
            facts.append(line)
    node = {pr: st["node"] for pr, st in studies.items()}
    bits = ["one 8-GPU node is enough without offload: " + _by_precision(node, lambda ok: "yes" if ok else "no")]
    if prm and prm.get("trainable") == prm.get("total"):
        bits.append(f"full training trains all {prm['total'] / 1e9:.1f} B parameters, not the "
                    f"{prm['active'] / 1e9:.1f} B active ones")

    def need80(st: dict) -> str:
        sm = st["smallest"]
        if sm is None:
            return "no GPU fits one node without offload"
        mem = _mem_gb(gpus, sm["gpu"])
        if mem is not None and mem < 80:
            return f"\u2265 80 GB not needed ({sm['gpu']} {g(mem, 0)} GB fits at {g(sm['per_gpu_gib'])} GiB/GPU)"
        return f"\u2265 80 GB needed (smallest that fits: {sm['gpu']} at {g(sm['per_gpu_gib'])} GiB/GPU)"
    bits.append(_by_precision(studies, need80))
    ok80 = [pr for pr, st in studies.items() if st["smallest"] and (_mem_gb(gpus, st["smallest"]["gpu"]) or 1e9) < 80]
    if ok80 and len(ok80) < len(studies):
        bits.append("so the 80 GB part of the claim is true under " + ", ".join(p for p in studies if p not in ok80)
                    + " and false under " + ", ".join(ok80))
    if unknown:
        bits.append(f"{name} is real but its GPU ({(chk['entry'] or {}).get('gpu') or '?'}) is not publicly "
                    "documented, so trainfit cannot size it")
    verdict = PARTLY if any(node.values()) else FALSE
    return Result("C9", verdict, "; ".join(bits), facts=facts, numbers=nums)


@claim("C10")
def c10(ctx: Ctx) -> Result:
    facts, nums = [], {}
    gpus = ctx.gpus()
    model = "Qwen3-235B-A22B"
    chk = ctx.instance_check("ml.gu8tf.8.40xlarge")
    facts.append(name_fact(chk))
    hw = ["--gpus", "32", "--gpus-per-node", "8"]
    plain = ctx.plan(model, "--method", "full", *hw, "--offload", "none", "--top", "50")
    anyp = ctx.plan(model, "--method", "full", *hw, "--top", "50")["plans"]
    ok_gpus = sorted({p["gpu"] for p in plain["plans"]}, key=lambda x: (_mem_gb(gpus, x) or 0, x))  # ties by name: a set has no order
    for p in plain["plans"]:
        facts.append(f"4 nodes \u00d7 8, no offload: {plan_line(p)}")
    for r in mem_rejections(plain):
        facts.append(f"4 nodes \u00d7 8, no offload: {rej_line(r)}")
    off80 = [p for p in anyp if offloads(p) and _mem_gb(gpus, p["gpu"]) == 80.0]
    if off80:
        facts.append(f"with offload on 80 GB GPUs: {plan_line(off80[0])}")
    lj = ctx.plan(model, "--method", "full", "--provider", "alibaba", "--resource-class", "pai-lingjun", "--spot", *hw)
    for r in lj["rejected"]:
        facts.append(f"Lingjun, spot, catalog GPUs: {rej_line(r)}")
    # the GPU behind the Lingjun codes is not documented: size it as the H800 a user would read in the console
    ljh = ctx.plan(model, "--method", "full", "--provider", "alibaba", "--resource-class", "pai-lingjun", "--gpu",
                   "H800", "--spot", *hw, tokens=TOKENS_JOB)
    pl = best(ljh["plans"])
    spot_ok = spot_consistency(ctx, pl) if pl else True
    if pl:
        facts.append(f"Lingjun, spot, `--gpu H800` stated, {TOKENS_JOB} tokens: {plan_line(pl)}; "
                     f"{g(pl['hours'])} h expected with {g(pl['expected_interruptions'])} interruptions, checkpoint "
                     f"every {g((pl['checkpoint_interval_hours'] or 0) * 60, 0)} min; cost "
                     f"{'unknown (no price)' if pl['cost'] is None else g(pl['cost'], 0) + ' ' + str(pl['currency'])}")
        for w in pl["warnings"]:
            facts.append(f"warning on that plan: {w}")
    rules = {r["id"]: r for r in ctx.rules()}
    for rid in ("lingjun-spot-regions", "spot-needs-checkpoints", "lingjun-needs-vpc"):
        if rid in rules:
            r = rules[rid]
            facts.append(f"rule `{rid}` ({r['severity']}): {r['title']}. Source: {r['source']}")
    bits = []
    if not name_ok(chk):
        bits.append(name_problem(chk))
    if ok_gpus:
        bits.append("32 GPUs fit without offload only with \u2265 "
                    f"{g(min(_mem_gb(gpus, x) or 0 for x in ok_gpus), 0)} GB GPUs ({', '.join(ok_gpus)})")
    if off80:
        bits.append(f"80 GB GPUs need {off80[0]['settings']['offload']} offload "
                    f"({g(off80[0]['host_ram_gib'], 0)} GiB host RAM/node)")
    if lj["rejected"] and not lj["plans"]:
        bits.append("the Lingjun GPU models are not publicly documented")
    if pl:
        bits.append(f"stated as H800, 4 Lingjun nodes fit with {pl['settings']['strategy']}"
                    + (f"+{pl['settings']['offload']} offload" if offloads(pl) else "")
                    + f" ({g(pl['host_ram_gib'], 0)} GiB host RAM/node) and spot adds "
                      f"{g(pl['expected_interruptions'])} expected interruptions per {TOKENS_JOB} tokens"
                    + ("" if spot_ok else " (inconsistent with trainfit's own spot model, see below)"))
    nums = {"gpus_fit_32_without_offload": ok_gpus,
            "offload_80gb_host_ram_gib": off80[0]["host_ram_gib"] if off80 else None,
            "lingjun_h800_spot": None if pl is None else {
                "per_gpu_gib": round(pl["per_gpu_gib"], 2), "host_ram_gib": pl["host_ram_gib"],
                "hours": round(pl["hours"], 1), "expected_interruptions": round(pl["expected_interruptions"], 2),
                "checkpoint_interval_hours": round(pl["checkpoint_interval_hours"], 3)}}
    return Result("C10", PARTLY if (ok_gpus or off80) else NA, "; ".join(bits), facts=facts, numbers=nums)


@claim("C11")
def c11(ctx: Ctx) -> Result:
    facts = []
    e = ctx.run("memory", "Qwen3-72B", "--gpu", "A100-80GB", expect_error=True)
    no72 = bool(e.error and e.error.get("code") == "unknown-model")
    if no72:
        facts.append(f"Qwen3-72B: {e.error['message']}; fix: {e.error.get('fix')}. Evaluated instead: Qwen3-32B, "
                     "the largest dense Qwen3")
    model = "Qwen3-32B"
    res = {}
    for method in ("lora", "qlora", "full"):
        res[method] = ctx.memory(model, "--method", method, "--gpu", "A100-80GB")
        facts.append(f"{model} {method} on one A100-80GB: {mem_line(res[method])}")
    z3 = ctx.memory(model, "--method", "full", "--gpu", "A100-80GB", "--strategy", "zero3", "--offload", "all")
    facts.append(f"{model} full, ZeRO-3 + offload all, one A100-80GB: {mem_line(z3)}, host RAM "
                 f"{g(z3.get('host_ram_gib'))} GiB; gradients on the GPU "
                 f"{g(z3.get('breakdown_gib', {}).get('gradients'))} GiB")
    one = best(ctx.plan(model, "--method", "full", "--gpu", "A100-80GB", "--gpus", "1")["plans"])
    ref8 = best(ctx.plan(model, "--method", "full", "--gpu", "A100-80GB", "--gpus", "8", "--gpus-per-node", "8",
                         "--offload", "none")["plans"])
    if one:
        facts.append(f"plan, one A100-80GB: {plan_line(one)}")
    if ref8:
        facts.append(f"no-offload reference, 8\u00d7A100-80GB: {plan_line(ref8)}")
    bits = ["there is no Qwen3-72B (evaluated Qwen3-32B)"] if no72 else []
    lora_ok = all("error" not in res[m] and res[m]["fits"] for m in ("lora", "qlora"))
    bits.append("LoRA and QLoRA fit" if lora_ok else "LoRA/QLoRA do not both fit")
    full_off = one is not None and offloads(one)
    if full_off:
        st = one["settings"]
        how = (f"full SFT fits only with {st['strategy']} + offload {st['offload']} ({g(one['host_ram_gib'], 0)} GiB "
               f"host RAM{', node RAM unknown: verdict ' + one['verdict'] if one['verdict'] != 'fits' else ''}) at "
               f"{g(one['tokens_per_s'], 0)} tokens/s")
        if ref8:
            per_gpu_ref = ref8["tokens_per_s"] / ref8["settings"]["gpus"]
            slow = 1 - one["tokens_per_s"] / per_gpu_ref
            how += (f", {slow:.0%} slower per GPU than no-offload {ref8['settings']['strategy']} on 8 GPUs"
                    + (", about the claimed 40%" if 0.3 <= slow <= 0.5 else ", not ~40%"))
        bits.append(how)
    elif one:
        bits.append("full SFT fits without offload")
    else:
        bits.append("full SFT does not fit even with offload")
    verdict = PARTLY if (lora_ok or full_off) else FALSE
    return Result("C11", verdict, "; ".join(bits), facts=facts)


@claim("C12")
def c12(ctx: Ctx) -> Result:
    facts = []
    models = {m["name"]: m for m in (ctx.run("models").data or []) if isinstance(m, dict)}
    a, b = "Qwen3-Next-80B-A3B", "Qwen3-235B-A22B"
    for x in (a, b):
        if x in models:
            facts.append(f"{x}: {models[x]['params_total']:,} total, {models[x]['params_active']:,} active parameters")
    hw = ["--gpu", "A100-80GB", "--gpus", "64", "--gpus-per-node", "8"]
    pa = best(ctx.plan(a, "--method", "full", *hw)["plans"])
    pb = best(ctx.plan(b, "--method", "full", *hw)["plans"])
    for x, p in ((a, pa), (b, pb)):
        facts.append(f"{x} full on 64\u00d7A100-80GB: " + (plan_line(p) if p else "no plan"))
    na, pna, _ = _min_gpus_no_offload(ctx, a, "A100-80GB")
    nb, pnb, _ = _min_gpus_no_offload(ctx, b, "A100-80GB")
    facts.append(f"fewest A100-80GB GPUs without offload: {a} {na}, {b} {nb}")
    if not (pa and pb):
        return Result("C12", NA, "no common configuration to compare", facts=facts)
    speed = pa["tokens_per_s"] / pb["tokens_per_s"]
    act = models[b]["params_active"] / models[a]["params_active"] if a in models and b in models else None
    tot = models[b]["params_total"] / models[a]["params_total"] if a in models and b in models else None
    facts.append(f"ratios {b} / {a}: active parameters {g(act, 2)}\u00d7, total parameters {g(tot, 2)}\u00d7, "
                 f"GPU-hours per token on the same 64 GPUs {g(speed, 2)}\u00d7")
    why = (f"{a} trains {g(speed, 1)}\u00d7 as many tokens/s as {b} on the same 64 A100s "
           f"(MFU {g(pa['mfu'], 3)} vs {g(pb['mfu'], 3)}); but memory follows all "
           f"{models[a]['params_total'] / 1e9:.0f} B parameters: without offload it needs \u2265 {na} A100s (vs {nb})")
    return Result("C12", TRUE if speed >= 2 else PARTLY if speed > 1 else FALSE, why, facts=facts)


@claim("C13")
def c13(ctx: Ctx) -> Result:
    facts = []
    model = "Qwen3-8B"
    gc_cut, vs_bf16 = [], []
    for seq in ("2048", "8192"):
        r = {}
        for key, opts in (("amp+gc", ("--precision", "amp-bf16", "--grad-ckpt")),
                          ("amp", ("--precision", "amp-bf16", "--no-grad-ckpt")),
                          ("bf16", ("--precision", "bf16", "--no-grad-ckpt")),
                          ("bf16+gc", ("--precision", "bf16", "--grad-ckpt"))):
            r[key] = ctx.memory(model, "--method", "full", "--seq-len", seq, *opts).get("reserved_gib")
        if None in r.values():
            continue
        cut = 1 - r["amp+gc"] / r["amp"]
        vs = r["amp+gc"] / r["bf16"] - 1
        gc_cut.append(cut)
        vs_bf16.append(vs)
        facts.append(f"{model} full, seq {seq}: AMP+GC {g(r['amp+gc'])} GiB, AMP {g(r['amp'])}, pure bf16 "
                     f"{g(r['bf16'])}, pure bf16+GC {g(r['bf16+gc'])}; GC under AMP: {-cut:+.0%}; AMP+GC vs pure bf16: "
                     f"{vs:+.0%}")
    if not gc_cut:
        return Result("C13", NA, "memory estimates failed", facts=facts)
    why = (f"GC saves {pct_range(gc_cut)} (more at long sequences); AMP adds memory (fp32 weights, grads, states): "
           f"AMP+GC vs pure bf16 without GC is {min(vs_bf16):+.0%} to {max(vs_bf16):+.0%}")
    near40 = any(0.3 <= c <= 0.5 for c in gc_cut)
    amp_saves = any(v <= -0.3 for v in vs_bf16)
    if near40 and amp_saves:
        return Result("C13", TRUE, why, facts=facts)
    return Result("C13", PARTLY if near40 else FALSE, why, facts=facts)


@claim("C14")
def c14(ctx: Ctx) -> Result:
    facts = []
    model = "Qwen3-8B"
    hw8 = ["--gpus", "8", "--gpus-per-node", "8", "--strategy", "zero3"]
    speed = {}
    for gpu in ("H100", "A100-80GB"):
        for prec in ("bf16", "fp8"):
            p = best(ctx.plan(model, "--method", "full", "--gpu", gpu, *hw8, "--precision", prec)["plans"])
            speed[(gpu, prec)] = p
            if p:
                facts.append(f"{model} full, 8\u00d7{gpu}, ZeRO-3, {prec}: {plan_line(p)}"
                             + (f"; warnings: {'; '.join(p['warnings'])}" if p["warnings"] else ""))
    mem = {}
    for prec in ("bf16", "amp-bf16", "fp8"):
        d = ctx.memory("Qwen3-4B", "--method", "full", "--seq-len", "4096", "--precision", prec)
        mem[prec] = d.get("reserved_gib")
        facts.append(f"Qwen3-4B full, one GPU, seq 4096, GC on, {prec}: {mem_line(d)}; optimizer+master "
                     f"{g(d.get('breakdown_gib', {}).get('optimizer'))} GiB, activations "
                     f"{g(d.get('breakdown_gib', {}).get('activations'))} GiB")
    for prec in ("bf16", "fp8"):
        d = ctx.memory(model, "--method", "full", "--gpus", "8", "--strategy", "zero3", "--no-grad-ckpt",
                       "--micro-batch", "2", "--precision", prec)
        mem[("z3", prec)] = d.get("reserved_gib")
        facts.append(f"{model} full, 8 GPUs ZeRO-3, GC off, micro-batch 2, {prec}: {mem_line(d)}")
    bits = []
    h_b, h_f = speed.get(("H100", "bf16")), speed.get(("H100", "fp8"))
    a_b, a_f = speed.get(("A100-80GB", "bf16")), speed.get(("A100-80GB", "fp8"))
    faster_h = h_b and h_f and h_f["tokens_per_s"] > h_b["tokens_per_s"] * 1.05
    if h_b and h_f:
        bits.append(f"H100: {h_f['tokens_per_s'] / h_b['tokens_per_s'] - 1:+.0%} tokens/s")
    if a_b and a_f:
        bits.append(f"A100 (no FP8 units): {a_f['tokens_per_s'] / a_b['tokens_per_s'] - 1:+.0%}")
    less_mem_z3 = mem.get(("z3", "fp8")) and mem.get(("z3", "bf16")) and mem[("z3", "fp8")] < mem[("z3", "bf16")]
    if mem.get(("z3", "fp8")) and mem.get(("z3", "bf16")):
        bits.append(f"ZeRO-3 memory {mem[('z3', 'fp8')] / mem[('z3', 'bf16')] - 1:+.0%} (activations)")
    if mem.get("fp8") and mem.get("bf16"):
        bits.append(f"without ZeRO {mem['fp8'] / mem['bf16'] - 1:+.0%} vs pure bf16 (fp32 master + grads)")
    more_mem_1 = mem.get("fp8") and mem.get("bf16") and mem["fp8"] > mem["bf16"]
    if faster_h and less_mem_z3 and not more_mem_1:
        return Result("C14", TRUE, "; ".join(bits), facts=facts)
    return Result("C14", PARTLY if faster_h else FALSE, "; ".join(bits), facts=facts)


@claim("C15")
def c15(ctx: Ctx) -> Result:
    facts = []
    hw = ["--gpu", "A100-80GB", "--gpus", "8", "--gpus-per-node", "8", "--strategy", "zero3"]
    slow = []
    for model in ("Qwen3-8B", "Qwen3-14B"):
        p = {}
        for off in ("none", "optimizer", "all"):
            p[off] = best(ctx.plan(model, "--method", "full", *hw, "--offload", off)["plans"])
            if p[off]:
                facts.append(f"{model}, offload {off}: {plan_line(p[off])}")
        if p["none"] and p["all"]:
            s = 1 - p["all"]["tokens_per_s"] / p["none"]["tokens_per_s"]
            slow.append(s)
            ratio = p["none"]["tokens_per_s"] / p["all"]["tokens_per_s"]
            facts.append(f"{model}: offload all is {s:.0%} slower ({ratio:.1f}\u00d7 the time)")
    if not slow:
        return Result("C15", NA, "no pair of plans to compare", facts=facts)
    why = (f"trainfit estimates ZeRO-3 + offload all {pct_range(slow)} slower than ZeRO-3 on the "
           "same 8 A100s at the planned global batch (CPU Adam once per optimizer step, amortised over the "
           "accumulated micro-batches, and PCIe transfers; docs/speed-model.md \u00a73.5, docs/launch.md)")
    if all(0.3 <= s <= 0.5 for s in slow):
        return Result("C15", TRUE, why, facts=facts)
    return Result("C15", FALSE if all(s > 0.55 or s < 0.25 for s in slow) else PARTLY, why, facts=facts)


# ---- platform rules: the verdict is the rule's, with its source

RULE_VERDICT = {"true": TRUE, "false": FALSE, "partly": PARTLY, "unverified": NA}

RULE_EXTRA = {  # related rules (by id) shown as context; their verdicts are not used
    "C16": ("pai-public-quota",),
    "C20": ("cpfs-needs-vpc", "no-vpc-public-gateway"),
    "C21": ("lingjun-custom-image-rdma",),
    "C22": ("dlc-world-size-is-nodes", "dlc-node-rank-not-rank-env"),
    "C23": ("spot-needs-checkpoints", "lingjun-spot-regions"),
}


def _rule_claim(cid: str) -> Callable[[Ctx], Result]:
    def ev(ctx: Ctx) -> Result:
        rules = ctx.rules(cid)
        facts, verdicts = [], []
        for r in rules:
            facts.append(f"rule `{r['id']}` ({r['severity']}, verified: {'yes' if r['verified'] else 'no'}, as of "
                         f"{r.get('as_of')}): {r['title']}. Verdict on {cid}: **{r['verdict']}**. Why: {r['why']} "
                         f"Source: {r['source']}")
            verdicts.append(RULE_VERDICT.get(str(r["verdict"]), NA))
        extra = RULE_EXTRA.get(cid, ())
        if extra:
            allr = {r["id"]: r for r in ctx.rules()}
            for rid in extra:
                if rid in allr:
                    r = allr[rid]
                    facts.append(f"related rule `{rid}` ({r['severity']}): {r['title']}. Source: {r['source']}")
        extra_facts, extra_verdict = EXTRA_CHECKS.get(cid, (lambda c: ([], None)))(ctx)
        facts += extra_facts
        if not rules:
            return Result(cid, NA, NO_RULE_WHY.get(cid, "no trainfit rule or model covers this claim"), facts=facts)
        verdict = verdicts[0] if len(set(verdicts)) == 1 else PARTLY
        why = rules[0]["title"] + (f" ({'; '.join(extra_verdict)})" if extra_verdict else "")
        if verdict == NA:
            why = "unverified: " + why
        return Result(cid, verdict, why, facts=facts, sources=[r["source"] for r in rules])
    return ev


def _c17_extra(ctx: Ctx) -> tuple[list[str], list[str] | None]:
    gpus = ctx.gpus()
    insts = ctx.instances()
    gddr = sorted({i["gpu"] for i in insts.values() if i["provider"] == "alibaba" and i.get("gpu")
                   and str(gpus.get(i["gpu"], {}).get("mem_type") or "").startswith("GDDR")})
    retired = sorted({i["gpu"] for i in insts.values() if i["provider"] == "alibaba" and i.get("gpu")
                      and any(x in i["gpu"] for x in ("T4", "V100", "P4"))})
    facts = []
    if gddr:
        facts.append("catalog: PAI instance types with GDDR GPUs: "
                     + ", ".join(f"{x} ({gpus[x]['mem_type']})" for x in gddr))
    if retired:
        facts.append("catalog: PAI instance types with T4/V100 GPUs still listed (sources in the catalog): "
                     + ", ".join(f"{n} ({i['gpu']})" for n, i in insts.items()
                                 if i["provider"] == "alibaba" and i.get("gpu") in retired))
    return facts, ([f"PAI types with {', '.join(gddr)} exist"] if gddr else None)


def _c18_extra(ctx: Ctx) -> tuple[list[str], list[str] | None]:
    insts = ctx.instances()
    pcie = [(n, i) for n, i in insts.items() if (i.get("gpu_count") or 0) > 1 and i.get("intra_node_link") == "pcie"]
    facts = ["catalog: multi-GPU instance types without NVLink: "
             + ", ".join(f"{n} ({i['gpu_count']}\u00d7{i['gpu']}, {i['provider']})" for n, i in pcie)] if pcie else []
    p = best(ctx.plan("Qwen3-8B", "--method", "lora", "--gpu", "A10", "--gpus", "2", "--gpus-per-node", "2")["plans"])
    if p:
        facts.append(f"trainfit plans a 2-GPU PCIe job: {plan_line(p)}")
    pai = [f"{n} ({i['gpu_count']}\u00d7{i['gpu']})" for n, i in pcie if i["provider"] == "alibaba"]
    bits = []
    if pai:
        more = f" and {len(pai) - 3} more PAI types" if len(pai) > 3 else ""
        bits.append(f"not required: PAI's {', '.join(pai[:3])}{more} have no NVLink")
    if p:
        bits.append(f"trainfit plans {p['instance_type']} with {p['settings']['gpus']} GPUs over PCIe")
    return facts, bits or None


def _c23_extra(ctx: Ctx) -> tuple[list[str], list[str] | None]:
    allr = {r["id"]: r for r in ctx.rules()}
    r = allr.get("spot-needs-checkpoints")
    bits = [r["title"][0].lower() + r["title"][1:]] if r else []
    facts = []
    spot = ctx.run("catalog", "show", "prices", "--provider", "alibaba", "--billing", "spot").data
    n_spot = len(spot) if isinstance(spot, list) else 0
    facts.append(f"price table: {n_spot} Alibaba spot price rows")
    # what spot costs in time for a Lingjun job (GPU stated as H800: the Lingjun codes are not documented)
    p = best(ctx.plan("Qwen3-30B-A3B", "--method", "full", "--provider", "alibaba", "--resource-class", "pai-lingjun",
                      "--gpu", "H800", "--gpus", "8", "--spot", tokens=TOKENS_JOB)["plans"])
    spot_ok = spot_consistency(ctx, p) if p else True
    if p:
        base = best(ctx.plan("Qwen3-30B-A3B", "--method", "full", "--provider", "alibaba", "--resource-class",
                             "pai-lingjun", "--gpu", "H800", "--gpus", "8", tokens=TOKENS_JOB)["plans"])
        facts.append(f"Qwen3-30B-A3B full, {TOKENS_JOB} tokens, one Lingjun node (`--gpu H800` stated), spot: "
                     f"{plan_line(p)}; "
                     f"{g(p['hours'])} h expected vs {g(base['hours']) if base else '?'} h on demand, "
                     f"{g(p['expected_interruptions'])} expected interruptions, checkpoint every "
                     f"{g((p['checkpoint_interval_hours'] or 0) * 60, 0)} min; spot price fraction "
                     f"{p['spot_price_fraction'] if p['spot_price_fraction'] is not None else 'unknown'}, cost "
                     f"{'unknown' if p['cost'] is None else g(p['cost'], 0)}")
        if base:
            bits.append(f"spot costs time too: {g(p['hours'] - base['hours'])} h more for {TOKENS_JOB} tokens on one "
                        f"Lingjun node ({g(p['expected_interruptions'])} expected interruptions, checkpoint every "
                        f"{g((p['checkpoint_interval_hours'] or 0) * 60, 0)} min"
                        + ("" if spot_ok else "; inconsistent with trainfit's own spot model, see below") + ")")
    if not n_spot:
        bits.append("no Alibaba spot price in trainfit's table to check either figure")
    return facts, bits or None


EXTRA_CHECKS: dict[str, Callable[[Ctx], tuple[list[str], list[str] | None]]] = {
    "C17": _c17_extra,
    "C18": _c18_extra,
    "C23": _c23_extra,
}

NO_RULE_WHY: dict[str, str] = {}

NO_RULE_NOTES = {
    "C24": ["pai-facts.md \u00a71.3 and \u00a75: Ulanqab is one of the Lingjun regions and of the two Lingjun spot "
            "regions; \u00a71.1: a Lingjun spot example is in zone cn-wulanchabu-a. No stock or price comparison "
            "between regions was found (\u00a71.4: no authoritative price table)."],
}

for _cid in [f"C{i}" for i in range(16, 24)]:
    EVALUATORS[_cid] = _rule_claim(_cid)


def _rule_fact(r: dict) -> str:
    return (f"rule `{r['id']}` ({r['severity']}, as of {r.get('as_of')}): {r['title']}. Why: {r['why']} "
            f"Source: {r['source']}")


@claim("C24")
def c24(ctx: Ctx) -> Result:
    facts = []
    region, other = "cn-wulanchabu", "cn-hangzhou"
    insts = ctx.run("catalog", "show", "instances", "--provider", "alibaba").data
    insts = insts if isinstance(insts, list) else []
    listed = [i["instance_type"] for i in insts if region in (i.get("regions") or [])]
    no_region = sum(1 for i in insts if not i.get("regions"))
    facts.append(f"catalog: {len(insts)} Alibaba instance rows; {len(listed)} list {region} "
                 f"({', '.join(listed) or 'none'}); {no_region} state no region")
    prices = ctx.run("catalog", "show", "prices", "--provider", "alibaba").data
    prices = prices if isinstance(prices, list) else []
    by_region: dict[str, int] = {}
    for p in prices:
        by_region[p.get("region") or "unstated"] = by_region.get(p.get("region") or "unstated", 0) + 1
    facts.append(f"price table: {len(prices)} Alibaba price rows"
                 + (" (" + ", ".join(f"{k}: {v}" for k, v in sorted(by_region.items())) + ")" if by_region else ""))
    rules = {r["id"]: r for r in ctx.rules()}
    for rid in ("lingjun-spot-regions", "lingjun-regions"):
        if rid in rules:
            facts.append(_rule_fact(rules[rid]))
    cheapest = {}
    for reg in (region, other):
        d = ctx.plan("Qwen3-8B", "--method", "lora", "--provider", "alibaba", "--region", reg)
        priced = [p for p in d["plans"] if p.get("cost") is not None]
        cheapest[reg] = min(priced, key=lambda p: p["cost"]) if priced else None
        facts.append(f"`plan --region {reg}` (Qwen3-8B LoRA, Alibaba): {len(d['plans'])} plans, {len(priced)} priced"
                     + (f"; cheapest {plan_line(cheapest[reg])}, {g(cheapest[reg]['cost'], 2)} "
                        f"{cheapest[reg]['currency']} ({cheapest[reg]['price_source']})" if cheapest[reg] else "")
                     + (f"; error: {d['error'].get('message')}" if d.get("error") else ""))
    nums = {"alibaba_rows": len(insts), "rows_listing_ulanqab": len(listed), "rows_without_region": no_region,
            "alibaba_price_rows": len(prices)}
    a, b = cheapest[region], cheapest[other]
    if a and b and a["currency"] == b["currency"]:
        cheaper = a["cost"] < b["cost"]
        nums["cheapest_cost"] = {region: a["cost"], other: b["cost"], "currency": a["currency"]}
        why = (f"the cheapest Alibaba plan for the same job costs {g(a['cost'], 2)} {a['currency']} in {region} vs "
               f"{g(b['cost'], 2)} in {other}; GPU stock and power prices are in no source")
        return Result("C24", PARTLY if cheaper else FALSE, why, facts=facts, numbers=nums)
    why = (f"trainfit has {len(prices)} Alibaba prices and {len(listed)} of {len(insts)} Alibaba rows list "
           f"{region}, so no region can be compared on price; stock and power prices are in no source"
           + ("; Ulanqab is one of the Lingjun spot regions (rule lingjun-spot-regions)"
              if "lingjun-spot-regions" in rules
              else ""))
    return Result("C24", NA, why, facts=facts, numbers=nums)


@claim("C25")
def c25(ctx: Ctx) -> Result:
    facts = []
    rules = {r["id"]: r for r in ctx.rules()}
    if "cpfs-needs-vpc" in rules:
        facts.append(_rule_fact(rules["cpfs-needs-vpc"]))
    # a job with no input pipeline at all in trainfit's model: how much of each step has GPU work
    hw = ["--gpu", "A100-80GB", "--gpus", "8", "--gpus-per-node", "8", "--strategy", "zero3"]
    busy, nums = [], {}
    for model in ("Qwen3-8B", "Qwen3-14B"):
        p = {off: best(ctx.plan(model, "--method", "full", *hw, "--offload", off)["plans"]) for off in ("none", "all")}
        if p["none"] and p["all"]:
            frac = p["all"]["tokens_per_s"] / p["none"]["tokens_per_s"]
            busy.append(frac)
            nums[model] = {"tokens_per_s_no_offload": round(p["none"]["tokens_per_s"]),
                           "tokens_per_s_offload_all": round(p["all"]["tokens_per_s"]),
                           "gpu_busy_fraction": round(frac, 3),
                           "mfu_offload_all": round(p["all"]["mfu"], 3)}
            facts.append(f"{model}, 8\u00d7A100-80GB, ZeRO-3: {g(p['none']['tokens_per_s'], 0)} tokens/s without "
                         f"offload, {g(p['all']['tokens_per_s'], 0)} with offload all (MFU {g(p['all']['mfu'], 3)}): "
                         "the GPUs have "
                         f"work for at most {frac:.0%} of each offloaded step (the rest is the CPU optimizer step and "
                         "PCIe transfers); trainfit models no input pipeline, so none of this is data loading")
    facts.append("CPFS 3\u00d7: no trainfit rule, catalog field or data-loading model gives a speed-up factor for CPFS "
                 "or Fluid")
    if busy and max(busy) < 0.6:
        why = (f"GPU utilisation under 60% does not mean an input bottleneck: with ZeRO-3 + CPU offload the GPUs have "
               f"work for at most {pct_range(busy)} of each step and no data loading is involved (trainfit's speed "
               "model); the CPFS 3\u00d7 figure has no source (not checkable)")
        return Result("C25", FALSE, why, facts=facts, numbers=nums)
    return Result("C25", NA, "no trainfit rule or data-loading model; no source gives a 3\u00d7 CPFS figure",
                  facts=facts, numbers=nums)


@claim("C26")
def c26(ctx: Ctx) -> Result:
    facts, nums = [], {}
    models = {m["name"]: m for m in (ctx.run("models").data or []) if isinstance(m, dict)}
    for name in ("Qwen3-30B-A3B", "Qwen3-235B-A22B"):
        m = models.get(name)
        if not m or not m.get("experts"):
            continue
        router = m["layers"] * m["experts"] * m["hidden_size"]
        nums[name] = {"router_params": router, "params_total": m["params_total"]}
        facts.append(f"{name}: router (gate) weights = layers {m['layers']} \u00d7 experts {m['experts']} "
                     f"\u00d7 hidden "
                     f"{m['hidden_size']} = {router:,} parameters, {router / m['params_total']:.3%} of "
                     f"{m['params_total']:,}; per token the router picks {m['experts_per_token']} of "
                     f"{m['experts']} experts")
    d = ctx.memory("Qwen3-30B-A3B", "--method", "full")
    prm = d.get("params", {})
    if prm:
        facts.append(f"`memory Qwen3-30B-A3B --method full`: trainable {prm.get('trainable', 0):,} of "
                     f"{prm.get('total', 0):,} parameters (the router included): saved and restored with the weights")
    rules = {r["id"]: r for r in ctx.rules()}
    if "spot-needs-checkpoints" in rules:
        facts.append(_rule_fact(rules["spot-needs-checkpoints"]))
    counts = ", ".join(f"{k}: {v['router_params']:,} parameters" for k, v in nums.items())
    why = ("Qwen3-MoE routing state is the router weights"
           + (f" ({counts})" if nums else "")
           + ", checkpointed like any weight; whether a resume is exact depends on RNG and data-loader state, "
             "which trainfit does not model")
    return Result("C26", NA, why, facts=facts, numbers=nums)


# --------------------------------------------------------------------------------------------------
# document


def parse_claims(text: str) -> dict[str, str]:
    """``{'C1': 'Qwen3-0.6B / 1.7B / 4B LoRA ...', ...}`` from claims.md (continuation lines joined)."""
    out: dict[str, str] = {}
    cur = None
    for line in text.splitlines():
        m = re.match(r"^- (C\d+)\.\s*(.*)$", line)
        if m:
            cur = m.group(1)
            out[cur] = m.group(2).strip()
        elif cur and line.startswith("  ") and line.strip():
            out[cur] += " " + line.strip()
        else:
            cur = None
    return out


def evaluate(cid: str, runner: Runner, facts_text: str) -> Result:
    ctx = Ctx(runner, facts_text)
    try:
        res = EVALUATORS[cid](ctx)
    except Exception as exc:  # a trainfit output we did not expect: report, do not hide
        res = Result(cid, NA, f"script error: {type(exc).__name__}: {exc}")
    res.commands = ctx.commands
    res.errors = ctx.errors + res.errors
    if cid in NO_RULE_NOTES and res.verdict == NA:
        res.facts += NO_RULE_NOTES[cid]
    return res


_PRECISION_CAVEAT = (
    "the answer depends on the precision, so both are run and both numbers are printed above. Pure bf16 "
    "(`--precision bf16`, trainfit's default: bf16 weights, gradients and AdamW states, no fp32 master copy) needs "
    "roughly half the memory per parameter of AMP (`--precision amp-bf16`: fp32 master weights, gradients and "
    "states with bf16 compute; what `bf16: true` means in the HF Trainer and in DeepSpeed's bf16 mode, used by "
    "ms-swift and LLaMA-Factory recipes). trainfit's \u201cnot needed\u201d findings are true under pure bf16; "
    "where the amp-bf16 line says otherwise, the claim holds for the usual AMP setup.")
CAVEATS = {"C3": _PRECISION_CAVEAT, "C9": _PRECISION_CAVEAT}


def render(results: list[Result], claims: dict[str, str], version: str) -> str:
    L = []
    L.append("# Public claims about training Qwen3 on PAI, checked with trainfit")
    L.append("")
    L.append(f"Generated by `python benchmarks/claims.py` on {date.today().isoformat()} with trainfit {version}, "
             "bundled catalog only (no user overlay, no refresh cache). The claims are those of "
             "`shared/reference/claims.md`; platform facts come from `shared/reference/pai-facts.md` and "
             "`trainfit catalog rules`, each with its source. Every verdict and reason below is computed by the "
             "script from the JSON of the commands shown; rerun the script to refresh this page.")
    L.append("")
    from trainfit.estimate.fit import HOST_RAM_FLOOR_GIB_PER_GPU, SAFETY_MARGIN_DEFAULT

    L.append("Conventions: `trainfit memory` and `plan` defaults unless a command says otherwise (sequence 2048, "
             "micro-batch 1, pure bf16, fused AdamW, GC on). Claims about fit and speed use "
             f"`plan --tokens {TOKENS}`: a short job, so that the planner's wall-clock limit (`--max-days`, 14 days by "
             "default) rejects no configuration that fits; \u201cdays per 1B tokens\u201d is 10\u2079 / tokens/s. "
             "Verdicts of the one fit decision: `fits` (reserved \u2264 usable \u00d7 "
             f"{1 - SAFETY_MARGIN_DEFAULT:g}), `tight` (inside that {SAFETY_MARGIN_DEFAULT:.0%} margin), `oom`, "
             "`unknown` (GPU memory fits but the node's host RAM is unknown and the job needs more than "
             f"{HOST_RAM_FLOOR_GIB_PER_GPU:g} GiB per GPU); `plan` keeps `fits` and `unknown` (ranked last). "
             "\u201cUsable\u201d GPU memory is what trainfit fits against (GDDR6 GPUs lose 1/16 to ECC). Speeds are "
             "trainfit's model (docs/speed-model.md), not measurements. Verdicts: **true**, **false**, **partly**, "
             "**not checkable**.")
    L.append("")
    L.append("## Summary")
    L.append("")
    L.append("| claim | verdict | why |")
    L.append("|---|---|---|")
    for r in results:
        short = claims.get(r.id, "")
        if len(short) > 70:
            short = short[:67].rsplit(" ", 1)[0]
            if short.count("`") % 2:  # do not leave a code span open
                short = short[:short.rindex("`")].rstrip()
            short += "\u2026"
        L.append(f"| [{r.id}](#{r.id.lower()}) {_cell(short)} | **{r.verdict}** | {_cell(r.why)} |")
    L.append("")
    counts = {v: sum(r.verdict == v for r in results) for v in (TRUE, FALSE, PARTLY, NA)}
    L.append("Totals: " + ", ".join(f"{n} {v}" for v, n in counts.items()) + ".")
    L.append("")
    for r in results:
        L.append(f"## {r.id}")
        L.append("")
        L.append(f"> {claims.get(r.id, '(claim text not found)')}")
        L.append("")
        L.append(f"**Verdict: {r.verdict}** \u2014 {r.why}.")
        L.append("")
        if r.commands:
            L.append("Commands:")
            L.append("")
            L.append("```console")
            L.extend(r.commands)
            L.append("```")
            L.append("")
        if r.facts:
            L.append("Key output:")
            L.append("")
            L.extend(f"- {f}" for f in r.facts)
            L.append("")
        if r.id in CAVEATS:
            L.append(f"Caveat: {CAVEATS[r.id]}")
            L.append("")
        if r.errors:
            L.append("Unexpected trainfit errors:")
            L.append("")
            L.extend(f"- {e}" for e in r.errors)
            L.append("")
    return "\n".join(L).rstrip() + "\n"


def _cell(s: str) -> str:
    return s.replace("|", "\\|").replace("\n", " ")


def run_all(runner: Runner, claims: dict[str, str], facts_text: str, ids: list[str] | None = None,
            echo: bool = False) -> list[Result]:
    """Evaluate the claims (all of ``claims`` in order, or ``ids``)."""
    ids = ids or sorted(claims, key=lambda c: int(c[1:]))
    results = []
    for cid in ids:
        if cid not in EVALUATORS:
            print(f"{cid}: no evaluator", file=sys.stderr)
            continue
        r = evaluate(cid, runner, facts_text)
        results.append(r)
        if echo:
            print(f"{cid:>4}  {r.verdict:<13}  {r.why}")
            for e in r.errors:
                print(f"      ! {e}", file=sys.stderr)
    return results


def digest(results: list[Result], version: str) -> str:
    """benchmarks/results/claims.json: each claim's verdict, reason, key numbers and commands."""
    doc = {"generator": "benchmarks/claims.py", "trainfit": version, "tokens": TOKENS, "tokens_job": TOKENS_JOB,
           "totals": {v: sum(r.verdict == v for r in results) for v in (TRUE, FALSE, PARTLY, NA)},
           "claims": [r.digest() for r in results]}
    return json.dumps(doc, indent=1, ensure_ascii=False, sort_keys=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT_MD)
    ap.add_argument("--json-out", type=Path, default=OUT_JSON)
    ap.add_argument("--claims", type=Path, default=CLAIMS_MD)
    ap.add_argument("--facts", type=Path, default=FACTS_MD)
    ap.add_argument("--only", help="comma-separated claim ids; prints verdicts, writes nothing")
    ap.add_argument("--inprocess", action="store_true",
                    help="call trainfit's main() in this process (fast) instead of a fresh process per command")
    a = ap.parse_args(argv)
    claims = parse_claims(a.claims.read_text(encoding="utf-8"))
    facts_text = a.facts.read_text(encoding="utf-8") if a.facts.exists() else ""
    runner = Runner(inprocess=a.inprocess)
    ids = [c.strip().upper() for c in a.only.split(",")] if a.only else None
    with isolated_catalog() if a.inprocess else contextlib.nullcontext():
        results = run_all(runner, claims, facts_text, ids, echo=True)
    if not a.only:
        version = runner.version()
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(render(results, claims, version), encoding="utf-8")
        a.json_out.parent.mkdir(parents=True, exist_ok=True)
        a.json_out.write_text(digest(results, version), encoding="utf-8")
        print(f"wrote {a.out} and {a.json_out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
