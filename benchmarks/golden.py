"""Golden outputs: every figure and file trainfit produces for a fixed set of inputs, as one digest per item, so
that a refactor can show it changed nothing (issue 30: "golden outputs before and after, exact equality").

    python benchmarks/golden.py              # write benchmarks/results/golden.json
    python benchmarks/golden.py --compare    # recompute and list every item that differs (exit 1 if any)

Items (bundled catalog only: no user overlay, no refresh cache, no calibration):

* ``memory/<config>``: the memory estimate of each configuration of ``benchmarks/grid.py`` (every term);
* ``speed/<row>``: the tokens/s of every published run of ``benchmarks/data/throughput.yaml``, kept and excluded;
* ``cli/<name>``: the ``--json`` output of a fixed list of commands (``memory``, ``plan`` with and without
  ``--target``/``--rl``/pinned layouts, ``models``, ``catalog``);
* ``render/<name>/<file>``: the bytes of every file ``render`` writes for those plans (all targets);
* ``check/<name>/<file>``: the findings of ``trainfit check`` on each rendered job file.

A digest is the SHA-256 of the canonical JSON (sorted keys) or of the file's bytes; ``golden.json`` also keeps a
short preview of each item so that a difference can be read without rerunning. Floats are compared exactly: a
behaviour-preserving change leaves every digest as it was.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import sys
import tempfile
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "results" / "golden.json"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "src"))

from claims import isolated_catalog  # noqa: E402 - the environment every in-process benchmark run gets

#: (name, argv) of the CLI outputs kept. Plans are rendered and checked as well (``render``/``check`` items).
COMMANDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("memory-8b-full", ("memory", "Qwen3-8B", "--gpu", "A100-80GB", "--gpus", "8", "--strategy", "zero3",
                        "--seq-len", "4096")),
    ("memory-30b-lora", ("memory", "Qwen3-30B-A3B", "--method", "lora", "--gpu", "H800", "--gpus", "8")),
    ("plan-8b", ("plan", "Qwen3-8B", "--tokens", "1e9")),
    ("plan-14b-alibaba", ("plan", "Qwen3-14B", "--tokens", "2e8", "--provider", "alibaba")),
    ("plan-32b-swift", ("plan", "Qwen3-32B", "--method", "lora", "--tokens", "5e8", "--target", "swift")),
    ("plan-30b-megatron", ("plan", "Qwen3-30B-A3B", "--tokens", "1e9", "--tp", "2", "--ep", "4",
                           "--target", "dlc", "--instance-type", "generic-8xH100")),
    ("plan-4b-llamafactory", ("plan", "Qwen3-4B", "--tokens", "1e8", "--target", "llamafactory",
                              "--spot")),
    ("plan-8b-grpo", ("plan", "Qwen3-8B", "--rl", "grpo", "--method", "lora", "--steps", "100",
                      "--instance-type", "generic-8xH100")),
    ("plan-8b-zero3", ("plan", "Qwen3-8B", "--tokens", "1e9", "--strategy", "zero3", "--gpus", "8")),
    ("plan-8b-verl", ("plan", "Qwen3-8B", "--rl", "grpo", "--rl-framework", "verl", "--steps", "100", "--num-generations", "8",
                      "--instance-type", "generic-8xH100")),
    ("memory-8b-grpo", ("memory", "Qwen3-8B", "--rl", "grpo", "--instance-type", "generic-8xH100")),
    ("models", ("models",)),
    ("catalog-instances", ("catalog", "show", "instances")),
)
#: The plans among COMMANDS that are rendered (``render --target all``) and whose files are checked.
RENDERED: tuple[str, ...] = ("plan-8b", "plan-14b-alibaba", "plan-32b-swift", "plan-30b-megatron",
                             "plan-4b-llamafactory", "plan-8b-grpo", "plan-8b-zero3", "plan-8b-verl")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _canon(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, default=repr).encode()


def _item(obj) -> dict:
    b = obj if isinstance(obj, bytes) else _canon(obj)
    return {"sha256": _digest(b), "preview": b[:160].decode("utf-8", "replace")}


def _run(argv: list[str]) -> tuple[int, str]:
    from trainfit.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as e:  # argparse
            rc = int(e.code or 0)
    return rc, out.getvalue() + ("\n[stderr]\n" + err.getvalue() if err.getvalue() else "")


def memory_items() -> dict[str, dict]:
    from grid import GRID, config_id
    from trainfit.estimate.memory import estimate_memory
    from trainfit.models import get_model
    from trainfit.workload import Workload

    out = {}
    for entry in GRID:
        est = estimate_memory(get_model(entry["model"]), Workload(**{k: v for k, v in entry.items() if k != "model"}))
        out[f"memory/{config_id(entry)}"] = _item(est.to_dict())
    return out


def speed_items() -> dict[str, dict]:
    import speed_loso
    from trainfit.estimate import engines

    data = yaml.safe_load((HERE / "data" / "throughput.yaml").read_text(encoding="utf-8"))
    out = {}
    for key in ("rows", "excluded_rows"):
        raws = [r for r in data[key] if r.get("gpu") in data["gpus"]]
        for row in speed_loso.load_rows(data, raws):
            out[f"speed/{row.id}"] = _item(repr(speed_loso.predict(row, engines.DEFAULT_CONSTANTS)))
    return out


def cli_items(tmp: Path) -> dict[str, dict]:
    out = {}
    for name, argv in COMMANDS:
        rc, text = _run([*argv, "--json"])
        out[f"cli/{name}"] = _item({"rc": rc, "out": text})
        if name not in RENDERED or rc != 0:
            continue
        plan_file = tmp / f"{name}.json"
        plan_file.write_text(text, encoding="utf-8")
        job = tmp / f"{name}-job"
        rc, text = _run(["render", "--plan", str(plan_file), "--pick", "1", "--target", "all", "--out", str(job), "--json"])
        out[f"render/{name}"] = _item({"rc": rc, "out": text.replace(str(tmp), "<tmp>")})
        for f in sorted(job.iterdir()) if job.is_dir() else ():
            if f.name == ".trainfit-manifest.json":
                continue
            out[f"render/{name}/{f.name}"] = _item(f.read_bytes().replace(str(tmp).encode(), b"<tmp>"))
            if f.name != "README.md" and not f.name.startswith("monitoring"):
                rc, text = _run(["check", str(f), "--json"])
                out[f"check/{name}/{f.name}"] = _item({"rc": rc, "out": text.replace(str(tmp), "<tmp>")})
    return out


def compute() -> dict[str, dict]:
    # the bundled catalog alone: no user overlay, no refresh cache, no calibration overlay
    with isolated_catalog(), tempfile.TemporaryDirectory(prefix="trainfit-golden-") as d:
        items = {**memory_items(), **speed_items(), **cli_items(Path(d))}
    return dict(sorted(items.items()))


def compare(old: dict[str, dict], new: dict[str, dict]) -> list[str]:
    """The items that differ, are new or are gone, one line each."""
    lines = []
    for k in sorted(set(old) | set(new)):
        a, b = old.get(k), new.get(k)
        if a is None:
            lines.append(f"new      {k}")
        elif b is None:
            lines.append(f"gone     {k}")
        elif a["sha256"] != b["sha256"]:
            lines.append(f"changed  {k}: {a['preview'][:70]!r} -> {b['preview'][:70]!r}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--compare", action="store_true", help="recompute and compare with the committed file")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    new = compute()
    if a.compare:
        old = json.loads(a.out.read_text(encoding="utf-8"))["items"]
        diff = compare(old, new)
        print("\n".join(diff) if diff else f"identical: {len(new)} items")
        return 1 if diff else 0
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps({"command": "python benchmarks/golden.py", "items": new}, indent=1,
                                ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {a.out}: {len(new)} items")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
