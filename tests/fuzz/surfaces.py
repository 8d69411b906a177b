"""Generators and oracles for the surfaces of issue 27 (the files trainfit reads besides job files and configs, the
folders it writes into, watch's options and the web handlers), shared by ``tests/fuzz/test_surfaces.py`` (CI budget)
and ``benchmarks/fuzz.py`` (full budget).

Each ``*_case(x, workdir)`` returns ``(outcomes, problems)`` like the cases of :mod:`fuzzkit`. Problems beyond
fuzzkit's (traceback, hang, exit code, strict JSON) start with a fixed word the benchmark counts:

* ``outside:`` a file created, changed or removed outside ``--out`` by render (symlinks, dangling links);
* ``overwritten:`` a user file (hand-edited, foreign, a link's target) changed without ``--force``;
* ``accepted:`` a tampered input that must be refused was not (exit code other than 2).

Nothing here reaches the network: ``submit`` runs as a dry run (no ``--yes``), ``watch`` gets no provider or
metadata URL, and the web handlers run in-process through fastapi's ``TestClient`` at ``http://127.0.0.1``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import fuzzkit as fk
from hypothesis import strategies as st

#: Special things put where a file is read: (kind, how to make it at a path).
SPECIAL = ("fifo", "dev-zero-link", "folder", "sparse-huge", "deep-json", "binary", "not-utf8", "dangling-link",
           "over-long-name")


def make_special(path: Path, kind: str, huge_bytes: int) -> Path:
    """Put a hostile thing of ``kind`` at ``path`` (sparse files use no disk); returns the path to read (for
    ``over-long-name``: a name longer than the file system allows, ENAMETOOLONG)."""
    if kind == "over-long-name":
        return path.parent / ("x" * 3000)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero-link":
        path.symlink_to("/dev/zero")
    elif kind == "folder":
        path.mkdir()
    elif kind == "sparse-huge":
        with open(path, "wb") as f:
            f.truncate(huge_bytes)
    elif kind == "deep-json":
        path.write_text("[" * 20_000 + "]" * 20_000)
    elif kind == "binary":
        path.write_bytes(b"\x00\x01\x02{\"runs\": 1}\xff")
    elif kind == "not-utf8":
        path.write_bytes('{"x": "caf\xe9"}'.encode("latin-1"))
    elif kind == "dangling-link":
        path.symlink_to(path.parent / "does-not-exist.json")
    return path


#: Numbers JSON or a float() parse into something hostile (written raw into the JSON text).
RAW_NUMBERS = ("NaN", "Infinity", "-Infinity", "1e999", "-1e999", "1e308", "-0", "0", "-1", "1" * 400, "1e-400",
               "123456789012345678901234567890", "true", "null", '"1.5"', '"nan"', "[]", "{}", "1.5", "3")


def _raw_json(obj: Any, raw: dict[str, str]) -> str:
    """``json.dumps(obj)`` with the string values ``@@k@@`` replaced by the raw text ``raw[k]`` (NaN, 1e999...)."""
    text = json.dumps(obj, ensure_ascii=False)
    for k, v in raw.items():
        text = text.replace(f'"@@{k}@@"', v)
    return text


# ------------------------------------------------------------------------------------------- calibrate RESULTS

PROBE_RUN = {"config": {"model": "Qwen3-0.6B", "method": "lora", "seq_len": 2048, "micro_batch": 1},
             "measured": {"tokens_per_s": 5000.0, "peak_mem_gib": 12.5}}
PROBE = {"device": "NVIDIA A10", "runs": {"lora-2k": PROBE_RUN}}


@st.composite
def calibrate_input(draw) -> dict[str, Any]:
    kind = draw(st.sampled_from(("mutated", "mutated", "raw-number", "special")))
    argv_extra = draw(st.sampled_from(([], ["--gpu", "A10"], ["--gpu", "A10", "--dry-run"], ["--json"],
                                       ["--gpu", draw(st.sampled_from(fk.HOSTILE))])))
    if kind == "special":
        return {"special": draw(st.sampled_from(SPECIAL)), "argv": argv_extra}
    if kind == "raw-number":
        doc = json.loads(json.dumps(PROBE))
        run = doc["runs"]["lora-2k"]
        where = draw(st.sampled_from((("measured", "tokens_per_s"), ("measured", "peak_mem_gib"),
                                      ("config", "seq_len"), ("config", "micro_batch"))))
        run[where[0]][where[1]] = "@@n@@"
        return {"text": _raw_json(doc, {"n": draw(st.sampled_from(RAW_NUMBERS))}), "argv": argv_extra}
    return {"text": json.dumps(draw(fk.mutated(PROBE, 4)), ensure_ascii=draw(st.booleans())), "argv": argv_extra}


def calibrate_case(x: dict[str, Any], workdir: Path) -> tuple[list[fk.Outcome], list[str]]:
    cal = workdir / "calibration.yaml"
    user = "# my notes\ngpus: {}\n"
    cal.write_text(user)
    p = workdir / "probe.json"
    if "special" in x:
        p = make_special(p, x["special"], 20 * 2**20)
    else:
        fk.write(p, x["text"])
    o = fk.run_cli(["calibrate", str(p), *x["argv"]], env={"TRAINFIT_CALIBRATION": str(cal)})
    probs = fk.problems_of(o, json_out="--json" in x["argv"])
    if "special" in x and x["special"] != "binary" and o.rc != 2:
        probs.append(f"accepted: calibrate read a {x['special']} (exit {o.rc})")
    if o.rc != 0 or "--dry-run" in x["argv"]:
        if cal.read_text() != user:
            probs.append("overwritten: calibrate changed the calibration file without succeeding")
    elif "# my notes" not in cal.read_text():
        probs.append("overwritten: calibrate dropped the user's comment")
    return [o], probs


# ------------------------------------------------------------------------------------------- diagnose METRICS

_KEYS = ("step", "step_seconds", "data_wait_seconds", "loss", "mem_reserved_gib", "save_seconds", "time_unix",
         "tokens", "event", "gpu_util", "x")


@st.composite
def metrics_input(draw) -> dict[str, Any]:
    kind = draw(st.sampled_from(("lines", "lines", "lines", "special")))
    opts: list[str] = []
    for flag in draw(st.lists(st.sampled_from(("--interruptions-per-hour", "--warmup-steps", "--pick")), max_size=2,
                              unique=True)):
        opts += [flag, draw(st.one_of(st.sampled_from(fk.NUMBERS), st.sampled_from(fk.HOSTILE)))]
    if draw(st.booleans()):
        opts.append("--json")
    if kind == "special":
        return {"special": draw(st.sampled_from(SPECIAL)), "argv": opts}
    lines = []
    n = draw(st.integers(1, 40))
    for i in range(n):
        shape = draw(st.integers(0, 9))
        if shape < 6:  # a plausible step line, maybe with a hostile number in it
            rec: dict[str, Any] = {"step": i + 1, "step_seconds": 1.0, "data_wait_seconds": 0.01, "loss": 2.0}
            raw = {}
            if shape >= 3:
                k = draw(st.sampled_from(_KEYS))
                rec[k] = "@@v@@"
                raw["v"] = draw(st.sampled_from(RAW_NUMBERS))
            lines.append(_raw_json(rec, raw))
        elif shape == 6:
            lines.append(json.dumps(draw(fk.mutated({"step": i + 1, "step_seconds": 1.0, "loss": 2.0}, 2))))
        elif shape == 7:
            depth = draw(st.sampled_from((50, 70, 1000, 40_000)))
            lines.append('{"step": %d, "x": %s%s}' % (i + 1, "[" * depth, "]" * depth))
        elif shape == 8:
            lines.append(draw(st.sampled_from(("", "{", "x" * 70_000, '{"step": 1e999}', "\x00", "[1, 2]",
                                               '{"step": "%s"}' % ("9" * 5000), "\ud800"))))
        else:
            lines.append(draw(st.text(max_size=40)).replace("\n", " "))
    return {"lines": lines, "argv": opts}


def diagnose_case(x: dict[str, Any], workdir: Path) -> tuple[list[fk.Outcome], list[str]]:
    p = workdir / "metrics.jsonl"
    if "special" in x:
        p = make_special(p, x["special"], 200 * 2**20)
    else:
        fk.write(p, "\n".join(x["lines"]) + "\n")
    o = fk.run_cli(["diagnose", str(p), *x["argv"]], seconds=fk.CASE_SECONDS)
    probs = fk.problems_of(o, json_out="--json" in x["argv"])
    if x.get("special") in ("fifo", "dev-zero-link", "folder", "sparse-huge", "dangling-link", "over-long-name") \
            and o.rc != 2:
        probs.append(f"accepted: diagnose read a {x['special']} (exit {o.rc})")
    return [o], probs


# ------------------------------------------------------------------------------------------- submit DIR

_JOB: dict[str, Any] = {}
RENDER_ARGV = ["render", "Qwen3-0.6B", "--method", "lora", "--instance-type", "ecs.gn7i-c8g1.2xlarge", "--tokens",
               "10M", "--target", "dlc,torchrun"]


def rendered_job(workdir: Path) -> Path:
    """A copy of one real rendered job folder (rendered once per process) at ``workdir/job``."""
    if "dir" not in _JOB:
        import tempfile

        import atexit

        top = tempfile.mkdtemp(prefix="trainfit-fuzz-job-")
        atexit.register(shutil.rmtree, top, True)
        d = Path(top) / "job"
        o = fk.run_cli([*RENDER_ARGV, "--out", str(d)])
        assert o.rc == 0, o.err
        _JOB["dir"] = d
    dst = workdir / "job"
    shutil.copytree(_JOB["dir"], dst)
    return dst


@st.composite
def submit_input(draw) -> dict[str, Any]:
    kind = draw(st.sampled_from(("job", "job", "manifest", "special", "file")))
    x: dict[str, Any] = {"kind": kind, "json": draw(st.booleans())}
    if kind in ("job", "file"):
        x["body"] = json.dumps(draw(fk.mutated(fk.DLC_BODY, 3)))
    elif kind == "manifest":
        x["manifest"] = draw(st.sampled_from(("drop", "hash", "garbage", "deep", "extra", "keep", "unlisted",
                                              "unlisted")))
        x["edit"] = draw(st.booleans())
    else:
        x["special"] = draw(st.sampled_from(SPECIAL))
        x["in_dir"] = draw(st.booleans())
    return x


def _tamper_manifest(readme: Path, how: str) -> None:
    text = readme.read_text()
    head, sep, last = text.rstrip("\n").rpartition("\n")
    if how == "drop":
        readme.write_text(head + "\n")
    elif how == "hash":
        readme.write_text(text.replace("sha256", "sha256x", 1) if "sha256" in text else
                          text[:-20] + "0" * 20)
    elif how == "garbage":
        readme.write_text(head + sep + "<!-- trainfit-manifest {not json -->\n")
    elif how == "deep":
        readme.write_text(head + sep + "<!-- trainfit-manifest " + "[" * 5000 + "]" * 5000 + " -->\n")
    elif how == "extra":
        readme.write_text(text + "<!-- trainfit-manifest {} -->\n")
    elif how == "unlisted":  # the manifest of a render that did not write dlc_job.json: the file there is stale
        i, j = last.index("{"), last.rindex("}") + 1
        doc = json.loads(last[i:j])
        doc["files"].pop("dlc_job.json")
        readme.write_text(head + sep + last[:i] + json.dumps(doc) + last[j:] + "\n")


def submit_case(x: dict[str, Any], workdir: Path) -> tuple[list[fk.Outcome], list[str]]:
    job = rendered_job(workdir)
    target: Path = job
    must_refuse = False
    if x["kind"] == "job":  # a hand-edited dlc_job.json the manifest lists: check runs on it, like any job file
        (job / "dlc_job.json").write_text(x["body"])
    elif x["kind"] == "file":
        target = fk.write(workdir / "body.json", x["body"])
    elif x["kind"] == "manifest":
        _tamper_manifest(job / "README.md", x["manifest"])
        if x["edit"]:
            p = job / "dlc_job.json"
            p.write_text(p.read_text().replace('"PodCount": 1', '"PodCount": 2'))
        must_refuse = x["manifest"] == "unlisted"
    else:
        p = job / "dlc_job.json" if x["in_dir"] else workdir / "body.json"
        if p.exists():
            p.unlink()
        p = make_special(p, x["special"], 20 * 2**20)
        target = job if x["in_dir"] and x["special"] != "over-long-name" else p
        must_refuse = True
    argv = ["submit", str(target), "--region", "cn-hangzhou"] + (["--json"] if x["json"] else [])
    o = fk.run_cli(argv)
    probs = fk.problems_of(o, json_out=x["json"])
    if must_refuse and o.rc == 0:
        probs.append(f"accepted: submit made a request of a tampered job ({x['kind']})")
    return [o], probs


# ------------------------------------------------------------------------------------------- watch options

WATCH_DURATIONS = ("--poll-seconds", "--kill-grace-seconds", "--lead-seconds", "--sigterm-lead-seconds",
                   "--margin-seconds")
DURATION_VALUES = ("nan", "inf", "-inf", "-1", "0", "1e9", "86401", "1e999", "NaN", "", " ", "0.1", "1", "2",
                   "²", "0x10", "1_0", "-0", "1e-9", "9" * 30)


@st.composite
def watch_input(draw) -> dict[str, Any]:
    opts: list[str] = []
    for flag in draw(st.lists(st.sampled_from(WATCH_DURATIONS), min_size=1, max_size=3, unique=True)):
        opts += [flag, draw(st.sampled_from(DURATION_VALUES))]
    notice = draw(st.sampled_from(("none", "none", "fifo", "folder", "dev-zero-link", "sparse-huge", "file",
                                   "dangling-link", "over-long-name")))
    return {"opts": opts, "notice": notice, "checkpoint": draw(st.booleans()),
            "long_paths": draw(st.integers(0, 5)) == 0}


def watch_case(x: dict[str, Any], workdir: Path) -> tuple[list[fk.Outcome], list[str]]:
    import sys

    long = workdir / ("x" * 3000)
    argv = ["watch", *x["opts"], "--stop-file", str(long if x.get("long_paths") else workdir / "stop")]
    if x["notice"] != "none":
        n = workdir / "notice"
        if x["notice"] == "file":
            n.write_text("terminate at 2000-01-01T00:00:00Z")
        else:
            n = make_special(n, x["notice"], 20 * 2**20)
        argv += ["--notice-file", str(n)]
    if x["checkpoint"]:
        (workdir / "ckpt").mkdir()
        argv += ["--checkpoint-dir", str(long if x.get("long_paths") else workdir / "ckpt")]
    argv += ["--", sys.executable, "-c", "import time; time.sleep(0.2)"]
    bad = any(v.strip().lower() in ("nan", "inf", "-inf", "1e999", "") or v.strip().startswith("-") and
              v.strip() not in ("-0",) or v in ("1e9", "86401", "9" * 30, "²", "0x10")
              for v in x["opts"][1::2])
    o = fk.run_cli(argv)
    # 143 (--restart-exit-code) is watch's answer to a notice: the trainer was stopped so the platform restarts it
    probs = [p for p in fk.problems_of(o) if p != "exit code 143"]
    if bad and o.rc != 2:
        probs.append(f"accepted: watch ran with a bad duration {x['opts']} (exit {o.rc})")
    return [o], probs


# ------------------------------------------------------------------------------------------- refresh caches

CACHE_INSTANCE = {"provider": "alibaba", "resource_class": "pai-public", "instance_type": "ecs.gn7i-c8g1.2xlarge",
                  "gpu": "A10", "gpu_count": 1, "regions": "cn-hangzhou", "verified": "yes",
                  "source": "https://www.alibabacloud.com/help/en/pai/", "as_of": "2026-12-01"}
CACHE_GPU = {"name": "A10", "source": "https://www.nvidia.com/en-us/data-center/products/a10-gpu/",
             "as_of": "2026-12-01"}
CACHE_PRICE = {"provider": "alibaba", "resource_class": "pai-public", "instance_type": "ecs.gn7i-c8g1.2xlarge",
               "region": "cn-hangzhou", "billing": "payg", "price_per_hour": 12.5, "currency": "CNY",
               "verified": "yes", "source": "https://www.alibabacloud.com/help/en/pai/", "as_of": "2026-12-01"}
CACHE_DOC = {"format": "trainfit-refresh/1", "gpus": [CACHE_GPU], "instances": [CACHE_INSTANCE],
             "prices": [CACHE_PRICE]}


@st.composite
def cache_input(draw) -> dict[str, Any]:
    kind = draw(st.sampled_from(("mutated", "mutated", "prices", "deep", "special", "many")))
    cmd = draw(st.sampled_from(("memory", "plan", "catalog-prices")))
    if kind == "special":
        return {"special": draw(st.sampled_from(SPECIAL)), "cmd": cmd}
    if kind == "deep":
        section = draw(st.sampled_from(("gpus", "instances", "prices")))
        depth = draw(st.sampled_from((63, 65, 5000)))
        text = json.dumps({**CACHE_DOC, section: "@@d@@"}).replace('"@@d@@"', "[" * depth + "]" * depth)
        return {"text": text, "cmd": cmd}
    if kind == "many":  # a long list of rows (under and over the 100,000-row cap stays below 8 MiB only if tiny)
        n = draw(st.sampled_from((1000, 100_001)))
        return {"text": json.dumps({**CACHE_DOC, "prices": [1] * n}), "cmd": cmd}
    if kind == "prices":
        row = draw(fk.mutated(CACHE_PRICE, 3))
        return {"text": json.dumps({**CACHE_DOC, "prices": [row]}), "cmd": cmd}
    return {"text": json.dumps(draw(fk.mutated(CACHE_DOC, 3))), "cmd": cmd}


def cache_case(x: dict[str, Any], workdir: Path) -> tuple[list[fk.Outcome], list[str]]:
    from trainfit.catalog import prices as P
    from trainfit.catalog.cache import read_cache_file
    from trainfit.errors import TrainfitError

    cdir = workdir / "cache" / "catalog"
    cdir.mkdir(parents=True)
    p = cdir / "alibaba-cn-hangzhou.json"
    cache_root = workdir / "cache"
    if x.get("special") == "over-long-name":  # TRAINFIT_CACHE_DIR itself over the name limit
        cache_root = workdir / ("x" * 3000)
    elif "special" in x:
        make_special(p, x["special"], 9 * 2**20)
    else:
        fk.write(p, x["text"])
    invalid = False  # memory reads the GPU and instance rows; plan and `catalog show prices` the prices too
    if x.get("special") not in ("dangling-link", "over-long-name"):
        for reader in (read_cache_file, P.read_cache_prices) if x["cmd"] != "memory" else (read_cache_file,):
            try:
                reader(p)
            except TrainfitError:
                invalid = True
            except Exception as e:  # noqa: BLE001 - the finding itself
                return [], [f"traceback: {reader.__name__} raised {type(e).__name__}: {str(e)[:200]}"]
    argv = {"memory": ["memory", "Qwen3-0.6B", "--gpu", "A10", "--json"],
            "plan": ["plan", "Qwen3-0.6B", "--tokens", "100M", "--provider", "alibaba", "--top", "1", "--json"],
            "catalog-prices": ["catalog", "show", "prices", "--provider", "alibaba", "--json"]}[x["cmd"]]
    import warnings

    P.reset_price_cache()
    try:
        with warnings.catch_warnings(record=True) as caught:  # the warning that names the cache, seen every time
            warnings.simplefilter("always")
            o = fk.run_cli(argv, env={"TRAINFIT_CACHE_DIR": str(cache_root)})
    finally:
        P.reset_price_cache()
    o.err += "".join(f"{w.category.__name__}: {w.message}\n" for w in caught)
    probs = fk.problems_of(o, json_out=True)
    # a cache is derived data (`catalog refresh` makes it again): one that does not validate is set aside with a
    # warning naming it, or stops the command; never used silently
    if invalid and o.rc != 2 and "refresh cache" not in o.err:
        probs.append(f"accepted: {x['cmd']} used a refresh cache that does not validate, silently (exit {o.rc})")
    return [o], probs


# ------------------------------------------------------------------------------------------- tampered plan files

_PAI_PLAN: dict[str, Any] = {}


def pai_plan() -> dict[str, Any]:
    """A PAI plan (``region`` null, the instance record's regions decide the image host), made once."""
    if "doc" not in _PAI_PLAN:
        o = fk.run_cli(["plan", "Qwen3-0.6B", "--method", "lora", "--tokens", "100M", "--provider", "alibaba",
                        "--top", "1", "--json"])
        assert o.rc == 0, o.err
        _PAI_PLAN["doc"] = json.loads(o.out)
    return _PAI_PLAN["doc"]


HOSTILE_REGIONS = ("x.attacker.example/evil#", "cn-hangzhou.attacker.example", "cn-hangzhou\nrm -rf /",
                   "attacker.example", "cn-hangzhou/../../x", "cn-hangzhou:443", "cn-hangzhou@evil", "",
                   "cn-hangzhou evil", "CN-HANGZHOU.ATTACKER", "cn-hangzhou\u2028x")
#: (name, value or raw JSON text) tampers that every one must make render refuse the plan.
TAMPERS = ("region-null-hostile-instance-region", "instance-region-not-a-string", "gpus-65536x65536",
           "nodes-huge", "spot-string-false", "spot-int", "model-dotdot", "model-slash", "model-control",
           "nan-number", "inf-number", "negative-nodes", "region-hostile", "verified-string",
           "gpu-count-string")


@st.composite
def tampered_plan(draw) -> dict[str, Any]:
    chosen = draw(st.lists(st.sampled_from(TAMPERS), min_size=1, max_size=3, unique=True))
    return {"tampers": chosen, "region": draw(st.sampled_from(HOSTILE_REGIONS)),
            "model": draw(st.sampled_from(("../../etc/x", "../Qwen3-0.6B", "Qwen3-0.6B/../../x", "..",
                                           "/etc/x", "~/x", "a\\\\b", "Qwen3\x00", "Qwen3\n-0.6B", "Qwen3\x1b[2J"))),
            "number": draw(st.sampled_from(("step_seconds", "gpu_mem_gib", "hours", "tokens")))}


def _apply_tamper(plan: dict[str, Any], t: str, x: dict[str, Any], raw: dict[str, str]) -> None:
    inst = plan.get("instance") if isinstance(plan.get("instance"), dict) else None
    if t == "region-null-hostile-instance-region" and inst is not None:
        plan["region"] = None
        inst["regions"] = [x["region"] or "x.attacker.example"]
    elif t == "region-hostile":
        plan["region"] = x["region"] or "x.attacker.example"
    elif t == "instance-region-not-a-string" and inst is not None:
        plan["region"] = None
        inst["regions"] = [7]
    elif t == "gpus-65536x65536":
        plan.update(nodes=65536, gpus_per_node=65536)
    elif t == "nodes-huge":
        plan["nodes"] = 10**12
    elif t == "negative-nodes":
        plan["nodes"] = -1
    elif t == "spot-string-false":
        plan["spot"] = "false"
    elif t == "spot-int":
        plan["spot"] = 0
    elif t == "model-dotdot":
        _set_model(plan, x["model"])
    elif t == "model-slash":
        _set_model(plan, "a/../../b")
    elif t == "model-control":
        _set_model(plan, "Qwen3\x00-0.6B")
    elif t in ("nan-number", "inf-number"):
        plan[x["number"]] = f"@@{t}@@"
        raw[t] = "NaN" if t == "nan-number" else "Infinity"
    elif t == "verified-string" and inst is not None:
        inst["verified"] = "true"
    elif t == "gpu-count-string" and inst is not None:
        inst["gpu_count"] = "8"


def _set_model(plan: dict[str, Any], name: str) -> None:
    if isinstance(plan.get("model"), dict):
        plan["model"]["name"] = name
    else:
        plan["model"] = name


def plan_tamper_case(x: dict[str, Any], workdir: Path) -> tuple[list[fk.Outcome], list[str]]:
    doc = json.loads(json.dumps(pai_plan()))
    plan = doc["plans"][0]
    raw: dict[str, str] = {}
    applied = []
    for t in x["tampers"]:
        before = json.dumps(plan, sort_keys=True)
        _apply_tamper(plan, t, x, raw)
        if json.dumps(plan, sort_keys=True) != before:
            applied.append(t)
    p = fk.write(workdir / "plan.json", _raw_json(doc, raw))
    out = workdir / "rendered"
    o = fk.run_cli(["render", "--plan", str(p), "--out", str(out), "--json"])
    probs = fk.problems_of(o, json_out=True)
    if applied and o.rc != 2:
        probs.append(f"accepted: render took a plan tampered with {applied} (exit {o.rc})")
        if o.rc == 0:
            probs += fk.scripts_have_only_known_commands(out) + fk.injection_errors(out)
    if applied and out.exists() and any(out.iterdir()):
        probs.append(f"accepted: render wrote files from a plan tampered with {applied}")
    return [o], probs


# ------------------------------------------------------------------------------------------- render into folders

FOLDER_THINGS = ("link-to-outside-file", "dangling-link-outside", "fifo", "hand-edited", "foreign-file",
                 "folder-where-a-file-goes", "link-to-outside-folder", "readonly-file", "manifest-tampered",
                 "stale-edited")
RENDER_NAMES = ("launch.sh", "dlc_job.json", "README.md", "swift_sft.sh", "llamafactory.yaml", "ds_config.json",
                "pytorchjob.yaml", "skypilot.yaml")


@st.composite
def folder_input(draw) -> dict[str, Any]:
    things = draw(st.lists(st.tuples(st.sampled_from(FOLDER_THINGS), st.sampled_from(RENDER_NAMES)), min_size=1,
                           max_size=3, unique_by=lambda t: t[1]))
    return {"things": things, "force": draw(st.booleans()), "pre_render": draw(st.booleans()),
            "target": draw(st.sampled_from(("all", "dlc,torchrun", "swift,llamafactory", "pytorchjob,skypilot")))}


def _snapshot(root: Path, skip: Path) -> dict[str, str]:
    """path -> what it is (sha256 of a file, the target of a link, 'dir', 'fifo') for everything under ``root``
    except ``skip`` (never following links)."""
    snap: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dp = Path(dirpath)
        if dp == skip or skip in dp.parents:
            dirnames[:] = []
            continue
        for name in dirnames + filenames:
            p = dp / name
            if p == skip:
                continue
            st_ = os.lstat(p)
            import stat as S

            if S.S_ISLNK(st_.st_mode):
                snap[str(p)] = "link:" + os.readlink(p)
            elif S.S_ISDIR(st_.st_mode):
                snap[str(p)] = f"dir:{st_.st_mode & 0o777:o}"
            elif S.S_ISREG(st_.st_mode):
                snap[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest() + f":{st_.st_mode & 0o777:o}"
            else:
                snap[str(p)] = f"special:{S.S_IFMT(st_.st_mode)}"
    return snap


def render_folder_case(x: dict[str, Any], workdir: Path) -> tuple[list[fk.Outcome], list[str]]:
    outside = workdir / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("precious")
    (outside / "victim.txt").chmod(0o600)
    (outside / "dir").mkdir()
    out = workdir / "out"
    argv = ["render", "Qwen3-0.6B", "--method", "lora", "--instance-type", "ecs.gn7i-c8g1.2xlarge", "--tokens", "10M",
            "--target", x["target"], "--out", str(out)]
    outs = []
    if x["pre_render"]:
        o = fk.run_cli(argv)
        outs.append(o)
        if o.rc != 0:
            return outs, fk.problems_of(o) + [f"a plain render failed: {o.err[-200:]}"]
    out.mkdir(exist_ok=True)
    user: dict[str, str] = {}  # path -> content that must survive without --force
    for thing, name in x["things"]:
        p = out / name
        if thing == "hand-edited" and p.is_file() and not p.is_symlink():
            p.write_text(p.read_text() + "\n# my edit\n")
            user[str(p)] = p.read_text()
            continue
        if thing == "stale-edited" and p.is_file() and not p.is_symlink():
            p.write_text(p.read_text() + "\n# mine, keep\n")
            user[str(p)] = p.read_text()
            continue
        if thing == "manifest-tampered" and (out / "README.md").is_file():
            r = out / "README.md"
            r.write_text(r.read_text().replace("sha256", "sha256x"))
            continue
        if p.is_symlink() or p.exists():
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()
        if thing == "link-to-outside-file":
            p.symlink_to(outside / "victim.txt")
        elif thing == "dangling-link-outside":
            p.symlink_to(outside / f"created-{name}")
        elif thing == "link-to-outside-folder":
            p.symlink_to(outside / "dir")
        elif thing == "fifo":
            os.mkfifo(p)
        elif thing == "folder-where-a-file-goes":
            p.mkdir()
            (p / "mine.txt").write_text("mine")
            user[str(p / "mine.txt")] = "mine"
        elif thing == "readonly-file":
            p.write_text("read-only, mine\n")
            p.chmod(0o400)
            user[str(p)] = "read-only, mine\n"
        else:  # foreign-file (and hand-edited/stale-edited/manifest-tampered where there was no earlier file)
            p.write_text("#!/bin/sh\necho mine\n")
            user[str(p)] = "#!/bin/sh\necho mine\n"
    before = _snapshot(workdir, out)
    o = fk.run_cli(argv + (["--force"] if x["force"] else []))
    outs.append(o)
    probs = fk.problems_of(o)
    after = _snapshot(workdir, out)
    for path in sorted(set(before) | set(after)):
        if before.get(path) != after.get(path):
            probs.append(f"outside: {path} changed outside --out ({before.get(path)} -> {after.get(path)})")
    if not x["force"]:
        for path, content in user.items():
            p = Path(path)
            try:
                now = p.read_text() if p.is_file() and not p.is_symlink() else None
            except OSError:
                now = None
            if now != content:
                probs.append(f"overwritten: {p.name} changed without --force")
    return outs, probs


# ------------------------------------------------------------------------------------------- web handlers

_WEB: dict[str, Any] = {}


def web_client():
    if "c" not in _WEB:
        from fastapi.testclient import TestClient

        from trainfit.web.app import create_app

        _WEB["c"] = TestClient(create_app(), base_url="http://127.0.0.1", raise_server_exceptions=False)
        _WEB["c"].__enter__()
    return _WEB["c"]


def close_web_client() -> None:
    c = _WEB.pop("c", None)
    if c is not None:
        c.__exit__(None, None, None)


WEB_BODIES = {
    "/api/memory": {"model": "Qwen3-0.6B", "gpu": "A10"},
    "/api/plan": {"model": "Qwen3-0.6B", "tokens": "100M", "top": 1},
    "/api/render": {"model": "Qwen3-0.6B", "gpu": "A10", "tokens": "10M"},
}
HOSTS = ("127.0.0.1", "127.0.0.1:8000", "localhost", "[::1]:8000", "attacker.example", "attacker.example:8000",
         "127.0.0.1.attacker.example", "localhost.attacker.example", "", "127.0.0.1:8000@evil", "0x7f000001",
         "127.1", "LOCALHOST", "evil\r\nx")
ORIGINS = (None, None, "http://127.0.0.1", "https://attacker.example", "null", "http://localhost.attacker.example",
           "http://127.0.0.1.attacker.example", "file://", "http://127.0.0.1:9999")
SURROGATES = ("\\ud800", "\\udcff", "x\\udc80y", "\\ud83d", "\\udfff\\ud800")


@st.composite
def web_request(draw) -> dict[str, Any]:
    path = draw(st.sampled_from(("/api/memory", "/api/plan", "/api/render", "/api/check", "/api/catalog",
                                 "/api/models", "/api/options", "/")))
    r: dict[str, Any] = {"path": path, "host": draw(st.sampled_from(HOSTS)), "origin": draw(st.sampled_from(ORIGINS)),
                         "site": draw(st.sampled_from((None, None, "same-origin", "cross-site", "same-site")))}
    if path in WEB_BODIES:
        body = json.loads(json.dumps(WEB_BODIES[path]))
        kind = draw(st.sampled_from(("surrogate", "mutated", "huge", "raw", "plain")))
        if kind == "surrogate":
            key = draw(st.sampled_from(sorted(body) + ["region", "method", "instance_type"]))
            body[key] = "@@s@@"
            r["content"] = json.dumps(body).replace('"@@s@@"', '"%s"' % draw(st.sampled_from(SURROGATES))).encode()
        elif kind == "mutated":
            r["content"] = json.dumps(draw(fk.mutated(body, 3))).encode("utf-8", "surrogatepass")
        elif kind == "huge":
            r["content"] = json.dumps({**body, "x": "a" * draw(st.sampled_from((11 * 2**20, 2 * 2**20)))}).encode()
        elif kind == "raw":
            r["content"] = draw(st.sampled_from((b"", b"{", b"\xff\xfe", b"[]", b"null", b'{"model": NaN}',
                                                 b"[" * 10_000 + b"]" * 10_000, b'{"model": "\xed\xa0\x80"}')))
        else:
            r["content"] = json.dumps(body).encode()
        r["method"] = "POST"
    elif path == "/api/check":
        r["method"] = "POST"
        r["file"] = draw(st.one_of(st.sampled_from((b"torchrun --nproc_per_node 8 x.py", b"\xff\xfe\x00",
                                                    b"a" * (11 * 2**20), b"[" * 10_000)),
                                   st.binary(max_size=100)))
        r["filename"] = draw(st.sampled_from(("job.sh", "dlc_job.json", "../../x.yaml", "x\ud800.sh", "", "a" * 300)))
    else:
        r["method"] = "GET"
    return r


def _loopback_host(host: str) -> bool:
    name = host.rsplit(":", 1)[0] if not host.startswith("[") else host.split("]")[0] + "]"
    return name.lower() in ("127.0.0.1", "localhost", "[::1]")


def web_case(r: dict[str, Any], workdir: Path) -> tuple[list[fk.Outcome], list[str]]:
    c = web_client()
    headers = {"host": r["host"]}
    if r["origin"] is not None:
        headers["origin"] = r["origin"]
    if r["site"] is not None:
        headers["sec-fetch-site"] = r["site"]
    o = fk.Outcome(argv=[r["method"], r["path"], f"host={r['host']!r}", f"origin={r['origin']!r}"])
    t = time.monotonic()
    try:
        if r["method"] == "GET":
            resp = c.get(r["path"], headers=headers)
        elif "file" in r:
            name = r["filename"].encode("utf-8", "surrogatepass").decode("utf-8", "replace")
            resp = c.post(r["path"], files={"file": (name, r["file"])}, headers=headers)
        else:
            resp = c.post(r["path"], content=r["content"], headers={**headers, "content-type": "application/json"})
    except Exception:  # noqa: BLE001 - an exception out of the client is a traceback
        import traceback

        o.traceback = traceback.format_exc()
        o.seconds = time.monotonic() - t
        return [o], fk.problems_of(o)
    o.seconds = time.monotonic() - t
    o.rc = resp.status_code
    o.out = resp.text[:2000]
    probs: list[str] = []
    if o.seconds > fk.CASE_SECONDS:
        probs.append(f"hang (> {fk.CASE_SECONDS:g} s)")
    if resp.status_code >= 500:
        probs.append(f"traceback: HTTP {resp.status_code} {resp.text[:200]}")
    foreign = not _loopback_host(r["host"]) and r["host"] != "testserver"
    # 413 (the server's body limit, checked before any handler) is a refusal too
    if foreign and resp.status_code not in (421, 413):
        probs.append(f"accepted: Host {r['host']!r} answered {resp.status_code}, not 421")
    cross = r["method"] == "POST" and not foreign and (
        (r["site"] is not None and r["site"] not in ("same-origin", "none")) or r["origin"] == "null" or
        (r["origin"] is not None and r["origin"].split("://", 1)[-1].lower() != r["host"].lower()))
    if cross and resp.status_code not in (403, 413):
        probs.append(f"accepted: cross-origin POST ({r['origin']!r}, {r['site']!r}) answered {resp.status_code}")
    if "/tmp/" in resp.text or str(workdir) in resp.text:
        probs.append("a server path in the answer")
    return [o], probs
