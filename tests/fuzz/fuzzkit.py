"""Generators and oracles of the hostile-input fuzz suite, shared by ``tests/fuzz`` (CI budget) and
``benchmarks/fuzz.py`` (>= 10,000 cases).

Every case runs ``trainfit.cli.main`` in-process under a wall-clock bound (``signal.setitimer``) with stdout
encoded strictly as UTF-8 (as a real terminal or pipe would) and stderr with ``backslashreplace`` (Python's
default for stderr). :func:`run_cli` returns what happened; :func:`problems_of` turns it into the list of
broken promises:

* the exit code is 0, 1 or 2 (``SystemExit`` of argparse included);
* nothing escaped ``main`` (no traceback), nothing printed "Traceback", no hang past the bound;
* ``--json`` output parses as strict JSON (no NaN / Infinity) when the command succeeded.

The render oracle (:func:`render_problems`) re-parses every rendered file with an independent parser (``bashlex``
for scripts, ``yaml.safe_load`` and ``json.loads`` for the rest) and compares the values with what went in.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

# ------------------------------------------------------------------------------------------- pools

#: Strings that broke trainfit before (issue 10) or that a shell, YAML or JSON treats specially.
HOSTILE: tuple[str, ...] = (
    "", " ", "\n", "a\nb", "cn-hangzhou\ntouch /tmp/pwned", "cn-hangzhou\rtouch /tmp/pwned", "$(touch /tmp/pwned)",
    "`touch /tmp/pwned`", "'; touch /tmp/pwned #", '"; touch /tmp/pwned #', "\\", "a b", "x" * 3000, "\x00",
    "\ud800", "\udcff", "²", "٣", "１２", "inf", "nan", "-inf", "Infinity", "NaN", "1e999", "-3", "0", "-0", "1" * 4400,
    "0x10", "1_000", "\u2028touch /tmp/pwned", "\x85touch /tmp/pwned", "${HOME}", "*", "~", "&", "|", "a;b", "{}",
    "[]", "null", "true", "--json", "-1e9", "9" * 30, "1e-400", "4k", "2B", "1e18", "8" * 19, "ecs.gn7i-c8g1.2xlarge\n",
    " cn-hangzhou", "oss://bkt/x y", "oss://bkt/$(id)/", "/mnt/a\nb", "A10\nB", "H1OO", "Qwen3-8B\n", "é", "😀",
    "C:\\x", "../../etc/passwd",
)
NUMBERS: tuple[str, ...] = ("1", "2", "8", "16", "64", "4096", "4k", "32K", "2B", "500M", "1e9", "0.5", "1e-4", "3",
                            "0", "-1", "1e18", "1e999", "inf", "nan", "3.5", "²", "9" * 30, "65536", "1000000")
VALID: dict[str, tuple[str, ...]] = {
    "model": ("Qwen3-8B", "Qwen3-0.6B", "Qwen3-30B-A3B", "qwen/qwen3-14b"),
    "gpu": ("A10", "H800", "H100", "A100-80GB", "L20"),
    "instance-type": ("ecs.gn7i-c8g1.2xlarge", "ml.gu7xf.8xlarge-gu108", "ecs.gn8v-8x.48xlarge"),
    "region": ("cn-hangzhou", "cn-wulanchabu", "ap-southeast-1"),
    "method": ("full", "lora", "qlora", "freeze"),
    "strategy": ("ddp", "zero1", "zero2", "zero3", "fsdp"),
    "offload": ("none", "optimizer", "all"),
    "precision": ("bf16", "amp-bf16", "fp16", "fp8"),
    "target": ("all", "dlc", "swift", "torchrun", "pytorchjob", "skypilot", "deepspeed", "llamafactory"),
    "image": ("registry.example.com/team/train:1.0",),
    "dataset": ("AI-ModelScope/alpaca-gpt4-data-en", "/mnt/data/train.jsonl"),
    "checkpoint-uri": ("oss://bkt/ckpt/", "pvc://ckpt/"),
    "job-name": ("my-job", "run.7"),
}
#: Options the harness sets itself (files and folders) or that reach the network.
SKIP_OPTIONS = {"--out", "--config", "--plan", "--help", "-h", "--endpoint", "--yes", "--catalog"}
COMMANDS = ("memory", "plan", "render", "check")
CASE_SECONDS = 20.0
"""Wall-clock bound of one case (a case past it is a hang)."""


class Hang(BaseException):
    """Raised by the timer inside a case that ran past its bound."""


# ------------------------------------------------------------------------------------------- runner

@dataclass
class Outcome:
    argv: list[str]
    rc: int | None = None
    out: str = ""
    err: str = ""
    seconds: float = 0.0
    hang: bool = False
    traceback: str = ""
    files: dict[str, str] = field(default_factory=dict)


def _on_alarm(signum, frame):  # pragma: no cover - only on a hang
    raise Hang()


def run_cli(argv: list[str], *, seconds: float = CASE_SECONDS, env: dict[str, str] | None = None) -> Outcome:
    """``trainfit.cli.main(argv)`` in-process, bounded in time; never raises (but re-raises KeyboardInterrupt)."""
    from trainfit.catalog import _store
    from trainfit.catalog import set_overlay_path
    from trainfit.cli import main

    o = Outcome(argv=list(argv))
    out_b, err_b = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_b, encoding="utf-8", errors="strict", write_through=True)
    err = io.TextIOWrapper(err_b, encoding="utf-8", errors="backslashreplace", write_through=True)
    old_env = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    _store.reset_cache()
    old = signal.signal(signal.SIGALRM, _on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    t = time.monotonic()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                o.rc = main(argv)
            except SystemExit as e:  # argparse
                o.rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    except Hang:
        o.hang = True
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - the finding itself
        o.traceback = traceback.format_exc()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        o.seconds = time.monotonic() - t
        for k, v in old_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        _store.reset_cache()
        set_overlay_path(None)
    o.out = out_b.getvalue().decode("utf-8", "replace")
    o.err = err_b.getvalue().decode("utf-8", "replace")
    return o


def _strict_json(text: str) -> Any:
    def bad(name: str) -> Any:
        raise ValueError(f"{name} in JSON output")

    return json.loads(text, parse_constant=bad)


def problems_of(o: Outcome, *, json_out: bool = False) -> list[str]:
    """The broken promises of one outcome (empty = fine)."""
    p: list[str] = []
    if o.hang:
        p.append(f"hang (> {CASE_SECONDS:g} s)")
    if o.traceback:
        p.append("traceback: " + o.traceback.strip().splitlines()[-1][:300])
    if "Traceback (most recent call last)" in o.err:
        p.append("traceback printed on stderr")
    if not o.hang and not o.traceback and o.rc not in (0, 1, 2):
        p.append(f"exit code {o.rc}")
    if json_out and o.rc in (0, 1) and o.out.strip():
        try:
            _strict_json(o.out)
        except ValueError as e:
            p.append(f"--json output is not strict JSON: {str(e)[:200]}")
    if re.search(r"\b(?:inf|nan)B? tokens|\binf GiB|\bnan GiB", o.out):
        p.append("infinite or NaN number in the output")
    return p


# ------------------------------------------------------------------------------------------- CLI options

def _option_table() -> dict[str, list[tuple[str, bool, tuple[str, ...]]]]:
    """command -> [(flag, takes a value, choices)] read from the real parser (follows every option change)."""
    import argparse

    from trainfit.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    table: dict[str, list[tuple[str, bool, tuple[str, ...]]]] = {}
    for name in COMMANDS:
        opts = []
        for a in sub.choices[name]._actions:
            if not a.option_strings or a.option_strings[0] in SKIP_OPTIONS:
                continue
            opts.append((a.option_strings[0], a.nargs != 0, tuple(a.choices or ())))
        table[name] = opts
    return table


_TABLE: dict[str, list[tuple[str, bool, tuple[str, ...]]]] = {}


def option_table() -> dict[str, list[tuple[str, bool, tuple[str, ...]]]]:
    if not _TABLE:
        _TABLE.update(_option_table())
    return _TABLE


def _value_for(flag: str, choices: tuple[str, ...]) -> st.SearchStrategy[str]:
    """Mostly plausible values (so the accepted paths run too), a hostile one about a third of the time."""
    key = flag.lstrip("-")
    valid = VALID.get(key, ()) + tuple(str(c) for c in choices)
    plausible = st.sampled_from(valid) if valid else st.sampled_from(NUMBERS[:12])
    return st.integers(0, 5).flatmap(lambda r: plausible if r < 3 else st.sampled_from(NUMBERS) if r == 3
                                     else st.sampled_from(HOSTILE))


@st.composite
def cli_argv(draw, command: str | None = None) -> list[str]:
    """argv for memory / plan / render / check with a few options, valid or hostile."""
    cmd = command or draw(st.sampled_from(("memory", "plan", "render")))
    argv = [cmd]
    if cmd != "check":
        hostile_model = draw(st.integers(0, 5)) == 0
        argv.append(draw(st.sampled_from(HOSTILE if hostile_model else VALID["model"])))
    opts = option_table()[cmd]
    chosen = draw(st.lists(st.sampled_from(opts), max_size=4, unique_by=lambda o: o[0]))
    for flag, takes, choices in chosen:
        argv.append(flag)
        if takes:
            argv.append(draw(_value_for(flag, choices)))
    if cmd == "plan" and "--tokens" not in argv and draw(st.integers(0, 4)) > 0:
        argv += ["--tokens", draw(st.sampled_from(("1B", "100M", "2e9", "500M")))]
    if cmd == "render" and not any(a in argv for a in ("--gpu", "--instance-type")):
        argv += ["--gpu", draw(st.sampled_from(VALID["gpu"]))]
    if draw(st.booleans()):
        argv.append("--json")
    return argv


def run_argv(argv: list[str], workdir: Path) -> tuple[Outcome, list[str]]:
    """Run a generated argv (render writes into ``workdir``; check gets a small job file) and judge it."""
    argv = list(argv)
    if argv[0] == "render":
        argv += ["--out", str(workdir / "out")]
    if argv[0] == "check":
        job = workdir / "job.json"
        job.write_text(json.dumps(DLC_BODY))
        argv.insert(1, str(job))
    o = run_cli(argv)
    return o, problems_of(o, json_out="--json" in argv)


# ------------------------------------------------------------------------------------------- files

QWEN3_CONFIG: dict[str, Any] = {
    "model_type": "qwen3", "hidden_size": 1024, "num_attention_heads": 16, "num_key_value_heads": 8,
    "num_hidden_layers": 28, "head_dim": 128, "intermediate_size": 3072, "vocab_size": 151936,
    "tie_word_embeddings": True, "max_position_embeddings": 40960,
}
MOE_CONFIG: dict[str, Any] = {**QWEN3_CONFIG, "model_type": "qwen3_moe", "num_experts": 128, "num_experts_per_tok": 8,
                              "moe_intermediate_size": 768, "decoder_sparse_step": 1, "mlp_only_layers": []}
DLC_BODY: dict[str, Any] = {
    "DisplayName": "job", "JobType": "PyTorchJob",
    "JobSpecs": [{"Type": "Worker", "PodCount": 1, "EcsSpec": "ecs.gn7i-c8g1.2xlarge",
                  "Image": "dsw-registry-vpc.cn-hangzhou.cr.aliyuncs.com/pai/x:1"}],
    "UserCommand": "torchrun --nnodes=$WORLD_SIZE --node_rank=$RANK -m swift.cli.sft --model Qwen/Qwen3-8B "
                   "--per_device_train_batch_size 1 --max_length 4096",
    "DataSources": [{"Uri": "oss://bkt/ckpt/", "MountPath": "/mnt/checkpoints", "MountAccess": "RW"}],
}
DS_CONFIG: dict[str, Any] = {"train_batch_size": 8, "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 1,
                             "zero_optimization": {"stage": 2}, "bf16": {"enabled": True}}
LLAMAFACTORY: dict[str, Any] = {"model_name_or_path": "Qwen/Qwen3-8B", "stage": "sft", "finetuning_type": "lora",
                                "per_device_train_batch_size": 2, "cutoff_len": 4096, "deepspeed": "ds_config.json"}
PYTORCHJOB: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "j"},
    "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": {"containers": [{
        "name": "pytorch", "image": "x/y:1", "command": ["bash", "-c", "torchrun -m swift.cli.sft --model Qwen/Qwen3-8B"],
        "resources": {"limits": {"nvidia.com/gpu": 8}}}]}}}}}}
SKYPILOT: dict[str, Any] = {"name": "j", "num_nodes": 2, "resources": {"accelerators": "H100:8", "use_spot": True},
                            "file_mounts": {"/mnt/checkpoints": {"name": "b", "mode": "MOUNT"}},
                            "run": "torchrun -m swift.cli.sft --model Qwen/Qwen3-8B"}
SCRIPT = ("#!/bin/sh\nset -eu\n: \"${WORLD_SIZE:=1}\" \"${RANK:=0}\"\n"
          "torchrun --nnodes=$WORLD_SIZE --node_rank=$RANK --nproc_per_node=8 \\\n"
          "    -m swift.cli.sft --model Qwen/Qwen3-8B --per_device_train_batch_size 1 --max_length 4096\n")
PAI_CLI = ("pai dlc job submit --name j --workspace-id 1 --worker-spec ecs.gn7i-c8g1.2xlarge --worker-count 1 "
           "--image x/y:1 --command 'torchrun -m swift.cli.sft --model Qwen/Qwen3-8B'\n")

#: Values that replace a field of a structured file (wrong types, hostile strings, huge and deep things).
_DEEP = {"a": None}
for _ in range(100):
    _DEEP = {"a": _DEEP}


def json_leaf() -> st.SearchStrategy[Any]:
    return st.one_of(
        st.sampled_from([None, True, False, 0, -1, 1, 2**31, 10**30, 1e308, -1e308, 1.5, "", [], {}, [1, 2], {"x": 1},
                         _DEEP, [[[[[[[[[[[]]]]]]]]]]]]),
        st.sampled_from(HOSTILE), st.integers(min_value=-10**6, max_value=10**6),
        st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=30))


def _paths(obj: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, prefix + (i,))
    return out


def _set(obj: Any, path: tuple, value: Any) -> Any:
    """A copy of ``obj`` with ``value`` (copied too: drawn values are shared objects) at ``path``."""
    value = json.loads(json.dumps(value))
    if not path:
        return value
    obj = json.loads(json.dumps(obj))
    cur = obj
    for k in path[:-1]:
        cur = cur[k]
    cur[path[-1]] = value
    return obj


@st.composite
def mutated(draw, base: Any, max_mutations: int = 3) -> Any:
    """``base`` with up to ``max_mutations`` fields replaced, deleted or added."""
    obj = json.loads(json.dumps(base))
    for _ in range(draw(st.integers(0, max_mutations))):
        path = draw(st.sampled_from(_paths(obj)))
        action = draw(st.sampled_from(("replace", "replace", "delete", "add")))
        if action == "delete" and path:
            parent = obj
            for k in path[:-1]:
                parent = parent[k]
            del parent[path[-1]]
        elif action == "add" and isinstance(_get(obj, path), dict):
            obj = _set(obj, path + (draw(st.sampled_from(("x", "EcsSpec", "Image", "spec", "run", "zero_optimization"))),),
                       draw(json_leaf()))
        else:
            obj = _set(obj, path, draw(json_leaf()))
    return obj


def _get(obj: Any, path: tuple) -> Any:
    for k in path:
        obj = obj[k]
    return obj


def _yaml(obj: Any) -> str:
    import yaml

    return yaml.safe_dump(obj, allow_unicode=True, sort_keys=False)


@st.composite
def text_mutation(draw, text: str) -> str:
    """Insert a hostile string at a random position of ``text``."""
    i = draw(st.integers(0, len(text)))
    return text[:i] + draw(st.one_of(st.sampled_from(HOSTILE), st.text(max_size=20))) + text[i:]


@st.composite
def job_file(draw) -> tuple[str, str | bytes]:
    """(file name, content) of a job file of any kind `check` reads, mutated."""
    kind = draw(st.sampled_from(("dlc", "ds", "lf", "pytorchjob", "skypilot", "script", "pai", "raw")))
    if kind == "dlc":
        return "dlc_job.json", json.dumps(draw(mutated(DLC_BODY)), ensure_ascii=draw(st.booleans()))
    if kind == "ds":
        return "ds_config.json", json.dumps(draw(mutated(DS_CONFIG)))
    if kind == "lf":
        return "train.yaml", _yaml(draw(mutated(LLAMAFACTORY)))
    if kind == "pytorchjob":
        return "pytorchjob.yaml", _yaml(draw(mutated(PYTORCHJOB)))
    if kind == "skypilot":
        return "task.yaml", _yaml(draw(mutated(SKYPILOT)))
    if kind == "script":
        return "launch.sh", draw(text_mutation(SCRIPT))
    if kind == "pai":
        return "submit.sh", draw(text_mutation(PAI_CLI))
    name = draw(st.sampled_from(("x.json", "x.yaml", "x.sh", "x")))
    return name, draw(st.one_of(st.binary(max_size=200), st.text(max_size=200)))


@st.composite
def config_file(draw) -> str:
    base = draw(st.sampled_from((QWEN3_CONFIG, MOE_CONFIG)))
    return json.dumps(draw(mutated(base)))


def write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, str):
        content = content.encode("utf-8", "surrogatepass")
    path.write_bytes(content)
    return path


def check_job_case(name: str, content: str | bytes, workdir: Path) -> tuple[Outcome, list[str]]:
    p = write(workdir / name, content)
    o = run_cli(["check", str(p), "--json"])
    return o, problems_of(o, json_out=True)


def config_case(content: str, workdir: Path) -> tuple[Outcome, list[str]]:
    d = workdir / "model"
    d.mkdir(exist_ok=True)
    write(d / "config.json", content)
    o = run_cli(["memory", "--config", str(d), "--gpu", "H100", "--json"])
    return o, problems_of(o, json_out=True)


# ------------------------------------------------------------------------------------------- overlays

OVERLAY_GPU = {"name": "Lab-A100", "mem_gib": 80, "mem_bandwidth_gbps": 2039, "bf16_dense_tflops": 312, "verified": "no",
               "source": "lab", "as_of": "2026-11-30"}
OVERLAY_INST = {"provider": "private", "resource_class": "private", "instance_type": "lab-8xa100", "gpu": "Lab-A100",
                "gpu_count": 8, "verified": "yes", "source": "lab wiki", "as_of": "2026-11-30"}


@st.composite
def overlay_text(draw) -> str:
    kind = draw(st.sampled_from(("structured", "structured", "text")))
    if kind == "text":
        return draw(st.one_of(st.sampled_from(["hello", "- 1\n- 2", "gpus: 5", "a: &x [1]\nb: *x", "{" * 200,
                                               "gpus:\n  - name: [\n"]), st.text(max_size=100)))
    return _yaml(draw(mutated({"gpus": [OVERLAY_GPU], "instances": [OVERLAY_INST]})))


def overlay_case(text: str, workdir: Path) -> tuple[list[Outcome], list[str]]:
    """An overlay in effect for memory and check: a broken one is exit 2 in both (never a silent pass)."""
    from trainfit.catalog.overlay import validate_overlay

    ov = write(workdir / "catalog.yaml", text)
    try:
        invalid = bool(validate_overlay(ov))
    except Exception as e:  # noqa: BLE001
        return [], [f"validate_overlay raised {type(e).__name__}: {e}"]
    job = write(workdir / "dlc_job.json", json.dumps(DLC_BODY))
    env = {"TRAINFIT_CATALOG_OVERLAY": str(ov)}
    outs, probs = [], []
    for argv in (["memory", "Qwen3-0.6B", "--gpu", "A10", "--json"], ["check", str(job), "--json"]):
        o = run_cli(argv, env=env)
        outs.append(o)
        probs += problems_of(o, json_out=True)
        if invalid and o.rc != 2:
            probs.append(f"{argv[0]} with an invalid overlay exited {o.rc}, not 2 (silent pass)")
    return outs, probs


# ------------------------------------------------------------------------------------------- plan.json

_PLAN_CACHE: dict[str, Any] = {}


def base_plan() -> dict[str, Any]:
    """One real plan document (``trainfit plan --json``), made once."""
    if "doc" not in _PLAN_CACHE:
        o = run_cli(["plan", "Qwen3-0.6B", "--tokens", "100M", "--provider", "alibaba", "--top", "2", "--json"])
        assert o.rc == 0, o.err
        _PLAN_CACHE["doc"] = json.loads(o.out)
    return _PLAN_CACHE["doc"]


_PLAN_FIELDS = ("instance_type", "gpu", "region", "provider", "resource_class", "source", "tokens", "nodes",
                "gpus_per_node", "gpu_mem_gib", "spot", "step_seconds", "cost", "hours")


@st.composite
def plan_document(draw) -> dict[str, Any]:
    doc = json.loads(json.dumps(base_plan()))
    plan = doc["plans"][0]
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(("top", "top", "model", "workload", "anywhere")))
        if where == "top":
            plan[draw(st.sampled_from(_PLAN_FIELDS))] = draw(json_leaf())
        elif where in ("model", "workload"):
            key = draw(st.sampled_from(sorted(plan[where])))
            plan[where][key] = draw(json_leaf())
        else:
            doc = draw(mutated(doc, 1))
            if not isinstance(doc, dict) or not isinstance(doc.get("plans"), list) or not doc["plans"] or \
                    not isinstance(doc["plans"][0], dict):
                return doc
            plan = doc["plans"][0]
    return doc


def plan_case(doc: Any, workdir: Path) -> tuple[Outcome, list[str]]:
    p = write(workdir / "plan.json", json.dumps(doc, allow_nan=True) if not isinstance(doc, str) else doc)
    out = workdir / "rendered"
    o = run_cli(["render", "--plan", str(p), "--out", str(out), "--json"])
    probs = problems_of(o, json_out=True)
    if o.rc == 0:
        probs += scripts_have_only_known_commands(out) + injection_errors(out)
    return o, probs


# ------------------------------------------------------------------------------------------- render round trip

RENDER_FIELDS = ("region", "image", "dataset", "job-name", "checkpoint-uri", "vpc-id", "workspace-id", "resource-id",
                 "lr", "epochs", "save-steps")


@st.composite
def render_values(draw) -> dict[str, str]:
    """Render options (valid or hostile) whose values must come back exactly from the rendered files."""
    chosen = draw(st.lists(st.sampled_from(RENDER_FIELDS), min_size=1, max_size=5, unique=True))
    vals = {}
    for f in chosen:
        if f in ("lr", "epochs", "save-steps"):
            vals[f] = draw(st.one_of(st.sampled_from(NUMBERS), st.sampled_from(("1e-5", "2e-4", "0.0001", "7")),
                                     st.sampled_from(HOSTILE)))
        else:
            pool = VALID.get(f, ("vpc-abc123", "ws-1", "quota12345"))
            vals[f] = draw(st.one_of(st.sampled_from(pool), st.sampled_from(HOSTILE),
                                     st.text(st.characters(codec="utf-8"), max_size=12).map(lambda s, p=pool[0]: p + s)))
    return vals


def render_case(vals: dict[str, str], workdir: Path, *, instance: str = "ecs.gn7i-c8g1.2xlarge",
                extra: tuple[str, ...] = ()) -> tuple[Outcome, list[str]]:
    out = workdir / "out"
    argv = ["render", "Qwen3-0.6B", "--method", "lora", "--instance-type", instance, "--spot",
            "--strategy", "zero2", "--tokens", "10M", "--out", str(out), *extra]
    for k, v in vals.items():
        argv += [f"--{k}", v]
    o = run_cli(argv)
    probs = problems_of(o)
    if o.rc == 0:
        probs += render_problems(out, vals)
    elif o.rc == 2 and all(v in _PLAIN for v in vals.values()) and not set(vals) & {"lr", "epochs", "save-steps"}:
        probs.append(f"plain values refused: {o.err.strip()[:200]}")
    return o, probs


_PLAIN = {"vpc-abc123", "ws-1", "quota12345", "cn-hangzhou", *VALID["image"], *VALID["dataset"], *VALID["checkpoint-uri"],
          *VALID["job-name"]}


_HEREDOC = re.compile(r"<<-?\s*'([A-Za-z_]+)'\n(.*?)\n\1\n", re.S)
#: First words of the commands trainfit's scripts run (anything else in a script is an injected command).
KNOWN_COMMANDS = {"set", "export", ":", "command", "cat", "mkdir", "if", "torchrun", "swift", "megatron", "cd",
                  "pai", "pip", "llamafactory-cli", "ls", "awk", "sort", "tail", "cut", "[", "head", "echo",
                  "dirname", "break", "trainfit"}


def _bash_commands(text: str) -> tuple[list[list[str]], list[str], list[str]]:
    """(commands as word lists, assignments ``NAME=value``, heredoc bodies) of a script, parsed by bashlex."""
    import bashlex

    bodies = [m.group(2) for m in _HEREDOC.finditer(text)]
    text = _HEREDOC.sub(lambda m: "< /dev/null\n", text)
    commands: list[list[str]] = []
    assigns: list[str] = []

    class V(bashlex.ast.nodevisitor):
        def visitcommand(self, node, parts):
            words = [p.word for p in parts if p.kind == "word"]
            while words and words[0] == "$WATCH":  # rendered scripts prefix the launcher with `trainfit watch`
                words = words[1:]
            assigns.extend(p.word for p in parts if p.kind == "assignment")
            if words:
                commands.append(words)

        def visitif(self, node, parts):
            commands.append(["if"])

    for tree in bashlex.parse(text):
        V().visit(tree)
    return commands, assigns, bodies


def _flags(words: list[str]) -> dict[str, str]:
    out = {}
    for i, w in enumerate(words):
        if w.startswith("--") and i + 1 < len(words) and not words[i + 1].startswith("--"):
            out[w[2:]] = words[i + 1]
    return out


def scripts_have_only_known_commands(out: Path) -> list[str]:
    """Every shell text rendered into ``out`` (scripts, DLC UserCommand, PyTorchJob command, SkyPilot run/setup)
    parses, and runs only the commands trainfit writes (an injected line shows up as another command)."""
    import yaml

    probs = []
    for name, text in _shell_texts(out, yaml):
        try:
            commands, _, _ = _bash_commands(text)
        except Exception as e:  # noqa: BLE001 - bashlex errors
            probs.append(f"{name}: bashlex cannot parse it: {type(e).__name__}: {str(e)[:120]}")
            continue
        for words in commands:
            head = words[0]
            if head not in KNOWN_COMMANDS and not head.startswith("$"):
                probs.append(f"{name}: runs an unexpected command {' '.join(words)[:120]!r}")
    return probs


def injection_errors(out: Path) -> list[str]:
    """trainfit's own rendered files give no shell-injection error (no false alarm on what render writes)."""
    from trainfit.check.facts import read_facts
    from trainfit.check.injection import find_injection

    probs = []
    for p in sorted(out.glob("*")):
        if p.name == "README.md":
            continue
        for f in find_injection(read_facts(p)):
            if f["severity"] == "error":
                probs.append(f"{p.name}: shell-injection on trainfit's own file: {f['message'][:200]}")
    return probs


def _shell_texts(out: Path, yaml: Any) -> list[tuple[str, str]]:
    texts = []
    for p in sorted(out.glob("*")):
        if p.suffix == ".sh":
            texts.append((p.name, p.read_text()))
        elif p.name == "dlc_job.json":
            texts.append((p.name + " UserCommand", json.loads(p.read_text())["UserCommand"]))
        elif p.name == "pytorchjob.yaml":
            doc = yaml.safe_load(p.read_text())
            for role, r in doc["spec"]["pytorchReplicaSpecs"].items():
                texts.append((f"{p.name} {role}", r["template"]["spec"]["containers"][0]["command"][2]))
        elif p.name == "skypilot.yaml":
            doc = yaml.safe_load(p.read_text())
            texts += [(f"{p.name} {k}", doc[k]) for k in ("setup", "run") if doc.get(k)]
    return texts


def render_problems(out: Path, vals: dict[str, str]) -> list[str]:
    """Re-parse the rendered files and compare with ``vals`` (the values after the gate's white-space trim)."""
    import yaml

    want = {k: v.strip() for k, v in vals.items()}
    probs = scripts_have_only_known_commands(out) + injection_errors(out)
    files = {p.name: p.read_text() for p in out.glob("*")}
    for name, text in files.items():
        if name.endswith((".sh", ".yaml")):
            for ch in ("\x85", "\u2028", "\u2029", "\r"):
                if ch in text:
                    probs.append(f"{name} holds a raw {ch!r} line break")
    body = json.loads(files["dlc_job.json"]) if "dlc_job.json" in files else None
    if body is not None:
        spec = body["JobSpecs"][0]
        checks = [("image", spec.get("Image")), ("checkpoint-uri", body["DataSources"][0]["Uri"]),
                  ("vpc-id", (body.get("UserVpc") or {}).get("VpcId")), ("workspace-id", body.get("WorkspaceId")),
                  ("resource-id", body.get("ResourceId"))]
        for k, got in checks:
            if k in want and got != want[k]:
                probs.append(f"dlc_job.json: {k} is {got!r}, {want[k]!r} went in")
        if "region" in want and "image" not in want and f".{want['region']}." not in spec.get("Image", ""):
            probs.append(f"dlc_job.json: region {want['region']!r} is not the image's region")
    for name in ("launch.sh", "swift_sft.sh"):
        if name not in files:
            continue
        commands, assigns, bodies = _bash_commands(files[name])
        train = next((w for w in commands if w[0] in ("torchrun", "swift", "megatron")), None)
        if train is None:
            probs.append(f"{name}: no training command")
            continue
        fl = _flags(train)
        if "dataset" in want and fl.get("dataset") != want["dataset"]:
            probs.append(f"{name}: --dataset is {fl.get('dataset')!r}, {want['dataset']!r} went in")
        if "lr" in want and float(fl.get("learning_rate", fl.get("lr", "nan"))) != float(want["lr"]):
            probs.append(f"{name}: learning rate {fl.get('learning_rate')!r}, {want['lr']!r} went in")
        if "epochs" in want and float(fl.get("num_train_epochs", "nan")) != float(want["epochs"]):
            probs.append(f"{name}: epochs {fl.get('num_train_epochs')!r}, {want['epochs']!r} went in")
        if "save-steps" in want and fl.get("save_steps") != str(int(want["save-steps"])):
            probs.append(f"{name}: save_steps {fl.get('save_steps')!r}, {want['save-steps']!r} went in")
        ckpt = [a.split("=", 1)[1] for a in assigns if a.startswith("CKPT_DIR=")]
        if not ckpt or fl.get("output_dir") != ckpt[0]:
            probs.append(f"{name}: output_dir {fl.get('output_dir')!r} is not CKPT_DIR {ckpt}")
        for b in bodies:
            try:
                _strict_json(b)
            except ValueError as e:
                probs.append(f"{name}: the DeepSpeed heredoc is not strict JSON ({e})")
    for name in ("pytorchjob.yaml", "skypilot.yaml", "llamafactory.yaml"):
        if name in files:
            try:
                doc = yaml.safe_load(files[name])
            except yaml.YAMLError as e:
                probs.append(f"{name}: not YAML ({str(e)[:100]})")
                continue
            if name == "pytorchjob.yaml" and "image" in want:
                img = doc["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["image"]
                if img != want["image"]:
                    probs.append(f"{name}: image {img!r}, {want['image']!r} went in")
            if name == "llamafactory.yaml" and "lr" in want and doc.get("learning_rate") != float(want["lr"]):
                probs.append(f"{name}: learning_rate {doc.get('learning_rate')!r}, {want['lr']!r} went in")
    if "ds_config.json" in files:
        try:
            _strict_json(files["ds_config.json"])
        except ValueError as e:
            probs.append(f"ds_config.json: {e}")
    return probs


# ------------------------------------------------------------------------------------------- helpers

@contextlib.contextmanager
def workdir():
    with tempfile.TemporaryDirectory(prefix="trainfit-fuzz-") as d:
        yield Path(d)


def ensure_src_on_path() -> None:
    src = Path(__file__).resolve().parents[2] / "src"
    if str(src) not in sys.path:
        sys.path.insert(0, str(src))
