"""Regenerate ``*_args.json``: the argument names ms-swift and LLaMA-Factory's parsers accept.

Neither package can be imported next to this project's pinned transformers/peft (ms-swift 4.6 needs
transformers < 5.20 and peft < 0.21; LLaMA-Factory 0.9.5 needs transformers <= 5.6 and peft <= 0.18.1),
so the tests check rendered arguments against the dataclass fields their ``HfArgumentParser`` builds
from, read here from the wheels' source with ``ast`` (nothing is imported from them). Fields inherited
from ``transformers.TrainingArguments`` come from the transformers installed when this script runs.

Usage (wheels from ``pip download --no-deps ms-swift==4.6.0 llamafactory==0.9.5``, unzipped)::

    python tests/launch/data/extract_arg_names.py SWIFT_ROOT LLAMAFACTORY_ROOT
"""

from __future__ import annotations

import ast
import dataclasses
import json
import sys
from pathlib import Path

HF_BASES = {"TrainingArguments", "Seq2SeqTrainingArguments", "HfSeq2SeqTrainingArguments", "BaseTrainingArguments"}


def _classes(root: Path) -> dict[str, list[ast.ClassDef]]:
    out: dict[str, list[ast.ClassDef]] = {}
    for f in sorted(root.rglob("*.py")):
        try:
            tree = ast.parse(f.read_text(encoding="utf-8"))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                out.setdefault(node.name, []).append(node)
    return out


def _base_name(b: ast.expr) -> str:
    if isinstance(b, ast.Name):
        return b.id
    if isinstance(b, ast.Attribute):
        return b.attr
    return ""


def _fields(name: str, classes: dict[str, list[ast.ClassDef]], seen: set[str]) -> tuple[set[str], set[str]]:
    """(field names, unresolved base names) of class ``name`` and its bases."""
    if name in seen:
        return set(), set()
    seen.add(name)
    names: set[str] = set()
    unresolved: set[str] = set()
    defs = classes.get(name)
    if not defs:
        return names, {name}
    for cls in defs:
        for stmt in cls.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                ann = ast.unparse(stmt.annotation)
                if "ClassVar" not in ann and not stmt.target.id.startswith("_"):
                    names.add(stmt.target.id)
        for b in cls.bases:
            bn = _base_name(b)
            if not bn or bn in ("object", "Generic"):
                continue
            sub, unres = _fields(bn, classes, seen)
            names |= sub
            unresolved |= unres
    return names, unresolved


def _hf_fields() -> tuple[set[str], str]:
    import transformers

    return {f.name for f in dataclasses.fields(transformers.Seq2SeqTrainingArguments)}, transformers.__version__


def extract(root: Path, entry: list[str]) -> tuple[list[str], list[str]]:
    classes = _classes(root)
    names: set[str] = set()
    unresolved: set[str] = set()
    for e in entry:
        n, u = _fields(e, classes, set())
        names |= n
        unresolved |= u
    return sorted(names), sorted(unresolved)


def main(swift_root: str, lf_root: str) -> None:
    hf, hf_version = _hf_fields()
    here = Path(__file__).parent
    specs = {
        "ms_swift": (Path(swift_root), "ms-swift==4.6.0", {
            "sft": ["SftArguments"], "megatron_sft": ["MegatronSftArguments"], "rlhf": ["RLHFArguments"]}),
        "llamafactory": (Path(lf_root), "llamafactory==0.9.5", {
            "train": ["ModelArguments", "DataArguments", "TrainingArguments", "FinetuningArguments",
                      "GeneratingArguments"]}),
    }
    for key, (root, pin, entries) in specs.items():
        doc = {"package": pin, "transformers_fields_from": f"transformers=={hf_version}",
               "how": "tests/launch/data/extract_arg_names.py (ast over the wheel's source)", "commands": {}}
        for cmd, entry in entries.items():
            names, unresolved = extract(root, entry)
            if set(unresolved) & HF_BASES:
                names = sorted(set(names) | hf)
            doc["commands"][cmd] = {"entry_classes": entry, "unresolved_bases": sorted(set(unresolved) - HF_BASES),
                                    "fields": names}
        (here / f"{key}_args.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(key, {c: len(v["fields"]) for c, v in doc["commands"].items()},
              {c: v["unresolved_bases"] for c, v in doc["commands"].items()})


if __name__ == "__main__":
    main(*sys.argv[1:3])
