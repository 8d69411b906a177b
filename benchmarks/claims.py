"""Check the public sizing claims C1..C26 with trainfit and write docs/claims.md.

Run: python benchmarks/claims.py [--out docs/claims.md] [--claims PATH] [--facts PATH] [--only C6,C22]

For every claim of shared/reference/claims.md this script runs trainfit commands (a fresh
``python -m trainfit.cli ... --json`` process each, bundled catalog only: no user overlay, no refresh
cache), derives a verdict (true / false / partly / not checkable) and a one-line reason from the JSON,
and writes the commands, the key numbers and the verdicts to docs/claims.md. Nothing here hard-codes a
memory, speed or rule number: change trainfit and rerun, and the document follows.

Instance-type names are checked against ``trainfit catalog show instances`` and against the spec-name
verdicts of shared/reference/pai-facts.md (section 7, "Claim (f)").

Tests (tests/test_claims.py) run some evaluators in-process through ``Runner(inprocess=True)``.
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

TRUE, FALSE, PARTLY, NA = "true", "false", "partly", "not checkable"
TOKENS = "1B"  # job length for `plan`; it only sets hours, never fit or tokens/s


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
            for k in ("TRAINFIT_CATALOG_OVERLAY", "TRAINFIT_CACHE_DIR"):
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

            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                rc = main(list(argv))
            text = buf.getvalue()
        else:
            r = subprocess.run([sys.executable, "-m", "trainfit.cli", *argv], capture_output=True, text=True,
                               env=self._subprocess_env())
            rc, text = r.returncode, r.stdout
            if not text.strip():
                text = json.dumps({"error": {"code": "no-output", "message": r.stderr.strip()[-500:], "fix": ""}})
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = {"error": {"code": "bad-json", "message": text[-500:], "fix": ""}}
        out = Out(cmd, rc, data)
        self._cache[argv] = out
        return out

    def version(self) -> str:
        if self.inprocess:
            from trainfit import __version__

            return __version__
        r = subprocess.run([sys.executable, "-m", "trainfit.cli", "--version"], capture_output=True, text=True,
                           env=self._subprocess_env())
        return r.stdout.strip() or "unknown"


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

    def plan(self, model: str, *opts: str) -> dict:
        d = self.run("plan", model, "--tokens", TOKENS, *opts).data
        if not isinstance(d, dict) or "plans" not in d:
            return {"plans": [], "rejected": [], "error": (d or {}).get("error") if isinstance(d, dict) else d}
        return d

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


def plan_line(p: dict) -> str:
    s = p["settings"]
    strat = s["strategy"] + (f"+offload {s['offload']}" if s["offload"] != "none" else "")
    if s.get("ep", 1) > 1:
        strat += f", EP {s['ep']}"
    return (f"{p['instance_type']} ({p['gpu']}) \u00d7 {p['nodes']} node(s), {s['gpus']} GPUs, {strat}, "
            f"GC {'on' if s['grad_ckpt'] else 'off'}, micro-batch {s['micro_batch']}: {g(p['per_gpu_gib'])} GiB/GPU "
            f"of {g(p['gpu_mem_gib'])}, host RAM {g(p['host_ram_gib'])} GiB/node, {g(p['tokens_per_s'], 0)} tokens/s, "
            f"MFU {g(p['mfu'], 3)}")


def rej_line(r: dict) -> str:
    return f"{r['instance_type']}: {r['code']}: {r['reason']}"


def mem_line(d: dict) -> str:
    if "error" in d:
        return f"error: {d['error'].get('message')}"
    s = f"reserved {g(d['reserved_gib'])} GiB/GPU (peak in {d['peak_phase']})"
    if d.get("gpu"):
        s += f" on {d['gpu']} (usable {g(d['gpu_mem_gib'])} GiB): {'fits' if d['fits'] else 'does not fit'}"
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
                if not d["fits"]:
                    fails.append(f"{model} {method} on {gpu}: {g(d['reserved_gib'])} > {g(d['gpu_mem_gib'])} GiB")
                if worst is None or d["reserved_gib"] > worst[0]["reserved_gib"]:
                    worst = (d, model, method, gpu)
                facts.append(f"{model} {method} on {gpu}: {g(d['reserved_gib'])} GiB of {g(d['gpu_mem_gib'])} usable, "
                             f"{'fits' if d['fits'] else 'does NOT fit'}; longest sequence at micro-batch 1: "
                             f"{d.get('max_seq_len'):,}")
    if fails:
        return Result("C1", FALSE, "; ".join(fails), facts=facts)
    d, model, method, gpu = worst
    why = (f"all 12 cases fit at seq 2048; the largest, {model} {method} on {gpu}, needs {g(d['reserved_gib'])} GiB "
           f"of {g(d['gpu_mem_gib'])} usable (longest sequence {d['max_seq_len']:,})")
    return Result("C1", TRUE, why, facts=facts)


def _fit_case(ctx: Ctx, model: str, gpu: str, gpus: int, precision: str) -> dict:
    hw = ["--gpu", gpu, "--gpus", str(gpus), "--gpus-per-node", str(gpus)]
    opts = ["--method", "full", *hw, "--precision", precision, "--grad-ckpt"]
    free = ctx.plan(model, *opts)
    plain = ctx.plan(model, *opts, "--offload", "none")
    return {"model": model, "gpu": gpu, "gpus": gpus, "precision": precision, "opts": opts,
            "no_offload": best(plain["plans"]), "any": best(free["plans"]),
            "rej": mem_rejections(free), "rej_plain": mem_rejections(plain)}


@claim("C2")
def c2(ctx: Ctx) -> Result:
    facts, states, caveat, host = [], [], [], []
    for model in ("Qwen3-8B", "Qwen3-14B"):
        for gpu, n, prec in (("A10", 2, "amp-bf16"), ("V100-32GB", 1, "fp16")):
            c = _fit_case(ctx, model, gpu, n, prec)
            label = f"{model} full on {n}\u00d7{gpu} ({prec}, GC on)"
            if c["no_offload"]:
                states.append("fits")
                facts.append(f"{label}: fits without offload: {plan_line(c['no_offload'])}")
            elif c["any"]:
                states.append("offload")
                host.append(c["any"]["host_ram_gib"])
                p = c["any"]
                no = c["rej_plain"][0] if c["rej_plain"] else None
                facts.append(f"{label}: fits only with {p['settings']['strategy']}+offload {p['settings']['offload']}"
                             f" ({g(p['per_gpu_gib'])} GiB/GPU, host RAM {g(p['host_ram_gib'])} GiB, "
                             f"{g(p['tokens_per_s'], 0)} tokens/s)"
                             + (f"; without offload {short_reason(no)}" if no else ""))
            else:
                states.append("no")
                r = c["rej"][0] if c["rej"] else None
                facts.append(f"{label}: does not fit even with ZeRO-3 + offload all"
                             + (f": {r['reason']}" if r else ""))
                # what fills the GPU in the best try, with the claimed precision and with pure bf16
                # (DeepSpeed ZeRO runs the model in its own bf16/fp16 mode, without torch autocast)
                for pr in (prec, "bf16"):
                    m = ctx.memory(model, "--method", "full", "--gpu", gpu, "--gpus", str(n), "--strategy", "zero3",
                                   "--offload", "all", "--precision", pr)
                    if "error" not in m:
                        bd = m["breakdown_gib"]
                        caveat.append(f"{model} on {n}\u00d7{gpu}, ZeRO-3 + offload all, {pr}: {mem_line(m)}; "
                                      f"activations {g(bd['activations'])} GiB, gradients on the GPU "
                                      f"{g(bd['gradients'])} GiB")
    facts += caveat
    if all(s == "fits" for s in states):
        return Result("C2", TRUE, "all four cases fit with AMP + GC alone", facts=facts)
    if any(s != "no" for s in states):
        n_off = states.count("offload")
        n_no = states.count("no")
        alone = states.count("fits")
        why = (f"AMP + GC alone fits {alone} of 4 cases; {n_off} fit only with ZeRO-3 + CPU offload "
               f"({g(min(host), 0)}+ GiB host RAM), {n_no} do not fit at all")
        return Result("C2", PARTLY, why, facts=facts)
    return Result("C2", FALSE, "none of the four cases fits, even with ZeRO-3 + offload", facts=facts)


def _big80(gpu: dict) -> bool:
    return gpu.get("mem_gib") == 80.0 and any(k in gpu["name"] for k in ("A100", "H100", "A800", "H800"))


@claim("C3")
def c3(ctx: Ctx) -> Result:
    gpus = ctx.gpus()
    insts = ctx.instances()
    facts, verdict_bits = [], []
    e = ctx.run("memory", "Qwen3-72B", expect_error=True)
    no72 = bool(e.error and e.error.get("code") == "unknown-model")
    if no72:
        facts.append(f"Qwen3-72B: {e.error['message']} (there is no Qwen3-72B; the largest dense Qwen3 is 32B)")
    for model in ("Qwen3-32B", "Qwen3-30B-A3B"):
        one = ctx.plan(model, "--method", "full", "--gpus", "1", "--offload", "none", "--top", "50")
        allp = ctx.plan(model, "--method", "full", "--top", "50")["plans"]
        multi_gpu = not one["plans"]
        single_node = [p for p in allp if p["nodes"] == 1 and p["settings"]["gpus"] > 1]
        other = sorted({p["gpu"] for p in single_node if not offloads(p)
                        and not _big80(gpus.get(p["gpu"], {"name": p["gpu"]}))})
        pcie = [p for p in single_node if not offloads(p)
                and (insts.get(p["instance_type"], {}).get("intra_node_link") in ("pcie", "none"))]
        min_gpus = min((p["settings"]["gpus"] for p in allp if not offloads(p)), default=None)
        facts.append(f"{model}: one GPU without offload: "
                     + ("no plan (multi-GPU needed)" if multi_gpu else plan_line(one["plans"][0])))
        if single_node:
            facts.append(f"{model}: single-node plan: {plan_line(single_node[0])}")
        other_s = ", ".join(f"{x} ({g(gpus.get(x, {}).get('mem_gib'), 0)} GB)" for x in other) or "none"
        facts.append(f"{model}: fewest GPUs of any plan without offload: {min_gpus}; GPUs other than 80 GB "
                     f"A100/H100-class that fit one node without offload: {other_s}")
        if pcie:
            facts.append(f"{model}: PCIe-only node (no NVLink) that fits: {plan_line(pcie[0])}")
        verdict_bits.append({"model": model, "multi_gpu": multi_gpu, "single_node": bool(single_node),
                             "other": other, "pcie": bool(pcie)})
    multi = all(b["multi_gpu"] for b in verdict_bits)
    relaxed = [b for b in verdict_bits if b["single_node"] or b["other"] or b["pcie"]]
    if multi and not relaxed:
        return Result("C3", TRUE, "multi-GPU, multi-node 80 GB A100/H100 with NVLink is required", facts=facts)
    parts = []
    if multi:
        parts.append("multi-GPU: yes")
    if any(b["single_node"] for b in verdict_bits):
        parts.append("multi-node/RDMA: not needed (one 8-GPU node fits)")
    if any(b["other"] for b in verdict_bits):
        parts.append("80 GB A100/H100: not needed (one node of "
                     + ", ".join(sorted({x for b in verdict_bits for x in b["other"]})) + " fits)")
    if any(b["pcie"] for b in verdict_bits):
        parts.append("NVLink: not needed (a PCIe-only node fits)")
    if no72:
        parts.append("no Qwen3-72B exists")
    return Result("C3", PARTLY if multi else FALSE, "; ".join(parts), facts=facts)


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
                    f"offload ({g(p16['host_ram_gib'], 0)} GiB host RAM/node)")
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
    facts = []
    gpus = ctx.gpus()
    name = "ml.gu7xf.8xlarge-gu108"
    chk = ctx.instance_check(name)
    facts.append(name_fact(chk))
    d = ctx.plan("Qwen3-30B-A3B", "--method", "full", "--instance-type", name)
    unknown = [r for r in d["rejected"] if r["code"] == "unknown-gpu"]
    if unknown:
        facts.append("plan on it: " + rej_line(unknown[0]))
    m = ctx.memory("Qwen3-30B-A3B", "--method", "full")
    prm = m.get("params", {})
    facts.append(f"Qwen3-30B-A3B full: trainable {prm.get('trainable', 0):,} of {prm.get('total', 0):,} parameters "
                 f"(active per token {prm.get('active', 0):,})")
    allp = ctx.plan("Qwen3-30B-A3B", "--method", "full", "--gpus", "8", "--gpus-per-node", "8", "--top", "50")["plans"]
    fits = sorted(allp, key=lambda p: gpus.get(p["gpu"], {}).get("mem_gib") or 1e9)
    small = fits[0] if fits else None
    if small:
        facts.append(f"smallest-memory GPU that fits one 8-GPU node: {plan_line(small)}")
    bits = ["one 8-GPU node is enough" if fits else "one 8-GPU node is not enough"]
    if prm and prm.get("trainable") == prm.get("total"):
        bits.append(f"full training trains all {prm['total'] / 1e9:.1f} B parameters, not the "
                    f"{prm['active'] / 1e9:.1f} B active ones")
    small_mem = gpus.get(small["gpu"], {}).get("mem_gib") if small else None
    if small_mem is not None and small_mem < 80:
        bits.append(f"\u2265 80 GB is not needed ({small['gpu']} {g(small_mem, 0)} GB fits)")
    if unknown:
        bits.append(f"{name} is real but its GPU (GU108) is unknown, so it cannot be sized")
    verdict = PARTLY if fits else FALSE
    return Result("C9", verdict, "; ".join(bits), facts=facts)


@claim("C10")
def c10(ctx: Ctx) -> Result:
    facts = []
    gpus = ctx.gpus()
    model = "Qwen3-235B-A22B"
    chk = ctx.instance_check("ml.gu8tf.8.40xlarge")
    facts.append(name_fact(chk))
    hw = ["--gpus", "32", "--gpus-per-node", "8"]
    plain = ctx.plan(model, "--method", "full", *hw, "--offload", "none", "--top", "50")
    anyp = ctx.plan(model, "--method", "full", *hw, "--top", "50")["plans"]
    ok_gpus = sorted({p["gpu"] for p in plain["plans"]}, key=lambda x: gpus.get(x, {}).get("mem_gib") or 0)
    for p in plain["plans"]:
        facts.append(f"4 nodes \u00d7 8, no offload: {plan_line(p)}")
    for r in mem_rejections(plain):
        facts.append(f"4 nodes \u00d7 8, no offload: {rej_line(r)}")
    off80 = [p for p in anyp if offloads(p) and gpus.get(p["gpu"], {}).get("mem_gib") == 80.0]
    if off80:
        facts.append(f"with offload on 80 GB GPUs: {plan_line(off80[0])}")
    lj = ctx.plan(model, "--method", "full", "--provider", "alibaba", "--resource-class", "pai-lingjun", "--spot", *hw)
    for r in lj["rejected"][:3]:
        facts.append(f"Lingjun spot types in the catalog: {rej_line(r)}")
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
                    f"{g(min(gpus.get(x, {}).get('mem_gib') or 0 for x in ok_gpus), 0)} GB GPUs ({', '.join(ok_gpus)})")
    if off80:
        bits.append(f"80 GB GPUs need optimizer offload ({g(off80[0]['host_ram_gib'], 0)} GiB host RAM/node)")
    if lj["rejected"] and not lj["plans"]:
        bits.append("Lingjun GPU models are unknown to the catalog")
    return Result("C10", PARTLY if (ok_gpus or off80) else NA, "; ".join(bits), facts=facts)


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
        slow = None
        if ref8:
            per_gpu_ref = ref8["tokens_per_s"] / ref8["settings"]["gpus"]
            slow = 1 - one["tokens_per_s"] / per_gpu_ref
            bits.append(f"full SFT fits only with ZeRO-3 + offload {one['settings']['offload']} "
                        f"({g(one['host_ram_gib'], 0)} GiB host RAM) at {g(one['tokens_per_s'], 0)} tokens/s, "
                        f"{slow:.0%} slower per GPU than no-offload {ref8['settings']['strategy']} on 8 GPUs, not ~40%")
        else:
            bits.append(f"full SFT fits only with ZeRO-3 + offload at {g(one['tokens_per_s'], 0)} tokens/s")
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
           "same 8 A100s (CPU Adam and PCIe transfers; assumptions of docs/speed-model.md \u00a73.5)")
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
        bits.append(f"not required: PAI's {', '.join(pai)} has no NVLink")
    if p:
        bits.append(f"trainfit plans {p['instance_type']} with {p['settings']['gpus']} GPUs over PCIe")
    return facts, bits or None


def _c23_extra(ctx: Ctx) -> tuple[list[str], list[str] | None]:
    allr = {r["id"]: r for r in ctx.rules()}
    r = allr.get("spot-needs-checkpoints")
    return [], ([r["title"][0].lower() + r["title"][1:]] if r else None)


EXTRA_CHECKS: dict[str, Callable[[Ctx], tuple[list[str], list[str] | None]]] = {
    "C17": _c17_extra,
    "C18": _c18_extra,
    "C23": _c23_extra,
}

NO_RULE_WHY = {
    "C24": "no trainfit rule; GPU stock, power and network prices per region are not in any source read",
    "C25": "no trainfit rule or data-loading model; no source gives a 3\u00d7 CPFS figure",
    "C26": "outside trainfit's model (checkpoint contents); no source read",
}

NO_RULE_NOTES = {
    "C24": ["pai-facts.md \u00a71.3 and \u00a75: Ulanqab is one of the Lingjun regions and of the two Lingjun spot "
            "regions; \u00a71.1: a Lingjun spot example is in zone cn-wulanchabu-a. No stock or price comparison "
            "between regions was found (\u00a71.4: no authoritative price table)."],
    "C25": ["pai-facts.md \u00a75: CPFS for Lingjun mounts via VSC + RDMA with the best latency and bandwidth, and "
            "Lingjun nodes offer local cache acceleration; no speed-up factor is stated. GPU utilisation below 60% "
            "has many causes (communication, small micro-batches, offload), not only input."],
    "C26": ["Qwen3-MoE routers are ordinary weights (trainfit counts the router tensor (E, h) per layer, "
            "docs/memory-model.md \u00a71), restored with the model; exactness of a resume depends on RNG and "
            "data-loader state, which trainfit does not model."],
}

for _cid in [f"C{i}" for i in range(16, 27)]:
    EVALUATORS[_cid] = _rule_claim(_cid)


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


CAVEATS = {
    "C2": "two modelling questions were reported to the project and may flip the 14B cases. (1) With "
          "ZeRO-2/3 + CPU offload trainfit keeps the bf16 gradient partition on the GPU, while DeepSpeed's "
          "ZeRO-Offload moves it to pinned host memory after the reduce-scatter (stage 3 allocates "
          "`grad_partitions_flat_buffer` on the CPU when `offload_optimizer` is set); trainfit already counts "
          "that buffer in host RAM. (2) With `--precision amp-bf16` under ZeRO, trainfit counts autocast's cache "
          "of bf16 copies of fp32 weights (2 B per linear weight element / dp) and an fp32 residual stream, "
          "although it models the ZeRO model weights as bf16 already (DeepSpeed runs the model in its bf16/fp16 "
          "mode, without autocast), so there is nothing to cast or cache; compare the two ZeRO-3 lines above.",
    "C11": "As in C2: with ZeRO-3 + offload trainfit keeps the gradient partition on the GPU, so the "
           "single-A100 figure with offload is pessimistic; the verdict does not change for Qwen3-32B.",
    "C10": "Multi-node plans on catalog entries with `inter_node: rdma` but no bandwidth (generic-8xA800, "
           "-8xH800, -8xH20) fall back to one 25 Gbit/s NIC per node, so their tokens/s are far too low.",
}


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
    L.append("Conventions: `trainfit memory` and `plan` defaults unless a command says otherwise (sequence 2048, "
             "micro-batch 1, pure bf16, fused AdamW, GC on); `--tokens 1B` only sets the job length (hours), not "
             "fit or tokens/s. \u201cUsable\u201d GPU memory is what trainfit fits against (GDDR6 GPUs lose 1/16 to "
             "ECC); `plan` also keeps a 5% margin. Speeds are trainfit's model (docs/speed-model.md), not "
             "measurements. Verdicts: **true**, **false**, **partly**, **not checkable**.")
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=OUT_MD)
    ap.add_argument("--claims", type=Path, default=CLAIMS_MD)
    ap.add_argument("--facts", type=Path, default=FACTS_MD)
    ap.add_argument("--only", help="comma-separated claim ids; prints verdicts, writes nothing")
    a = ap.parse_args(argv)
    claims = parse_claims(a.claims.read_text(encoding="utf-8"))
    facts_text = a.facts.read_text(encoding="utf-8") if a.facts.exists() else ""
    runner = Runner()
    ids = [c.strip().upper() for c in a.only.split(",")] if a.only else sorted(claims, key=lambda c: int(c[1:]))
    results = []
    for cid in ids:
        if cid not in EVALUATORS:
            print(f"{cid}: no evaluator", file=sys.stderr)
            continue
        r = evaluate(cid, runner, facts_text)
        results.append(r)
        print(f"{cid:>4}  {r.verdict:<13}  {r.why}")
        for e in r.errors:
            print(f"      ! {e}", file=sys.stderr)
    if not a.only:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(render(results, claims, runner.version()), encoding="utf-8")
        print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
