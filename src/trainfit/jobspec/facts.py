"""The facts read from a job spec (:class:`JobFacts`) and the helpers every reader of one uses: the input gate for
job files, type errors that name the field, the trainfit header's plan line. Below ``check`` (which dispatches a file
to its reader and runs the rules) and the providers' readers (``providers/*/..._reader``), which fill it in."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from trainfit.errors import CheckInputError
from trainfit.i18n import _
from trainfit.inputs import InputError, as_int, loads_json, loads_yaml_all, read_text_file
from trainfit.jobspec.shell import Script, parse_script
from trainfit.json_types import JSON, JSONLike, JSONObject, YAMLValue

MAX_BYTES = 2 * 2**20
_REGION_IN_IMAGE = re.compile(r"\.((?:cn|ap|us|eu|me)-[a-z0-9-]+?)\.(?:cr\.)?aliyuncs\.com")
REGION_IN_OSS = re.compile(r"oss-((?:cn|ap|us|eu|me)-[a-z0-9-]+?)(?:-internal)?\.aliyuncs\.com")


@dataclass
class JobFacts:
    kind: str
    """dlc-json | pai-cli | shell | pytorchjob | skypilot | deepspeed | llamafactory."""
    path: str = ""
    platform: str = "generic"
    """pai-dlc | kubernetes | skypilot | generic (decides how WORLD_SIZE/RANK are read)."""
    instance_types: list[str] = field(default_factory=list)
    nodes: int | None = None
    gpus_per_node: int | None = None
    gpu: str | None = None
    spot: bool = False
    resource_id: str | None = None
    vpc: dict[str, JSON] | None = None
    mounts: list[str] = field(default_factory=list)
    """Persistent mount paths (OSS/NAS/CPFS data sources, PVCs, SkyPilot buckets)."""
    images: list[str] = field(default_factory=list)
    regions: dict[str, str] = field(default_factory=dict)
    """where -> region id, from image registries, OSS endpoints, the catalog."""
    envs: dict[str, str] = field(default_factory=dict)
    settings: dict[str, JSON] = field(default_factory=dict)
    scripts: list[tuple[str, Script]] = field(default_factory=list)
    """(where, parsed script) of every shell text in the file (UserCommand, container command, run...)."""
    engine: str | None = None
    train: dict[str, str] = field(default_factory=dict)
    """Training arguments found (ms-swift/LLaMA-Factory names as written)."""
    ds_config: JSONObject | None = None
    header: dict[str, JSON] = field(default_factory=dict)
    """``key value`` facts of a trainfit header, if the file has one."""
    placeholders: list[str] = field(default_factory=list)
    body_bytes: int = 0
    notes: list[str] = field(default_factory=list)
    memory: dict[str, JSONLike] | None = None
    """What the memory check found (``check --json``'s ``memory``): the GPU, the predicted reserved GiB per GPU with
    its p10/p50/p90 (:func:`trainfit.estimate.uncertainty.memory_range`), the usable GiB, the verdict and P(OOM);
    None when the file's memory was not checked."""

    @property
    def plan(self) -> JSONObject:
        """The ``trainfit-plan {...}`` facts of a rendered file's header (``{}`` when it has none)."""
        return self.header.get("plan") or {}


def read_text(path: str | Path) -> str:
    """UTF-8 text of a job file through the input gate (regular file, bounded read, no binary)."""
    return read_text_file(path, max_bytes=MAX_BYTES, what=_("job file"), error=CheckInputError,
                          fix=_("pass a job file (JSON, YAML or a shell script)"))


def load_json(text: str, path: str) -> JSON:
    return loads_json(text, what=str(path), error=CheckInputError)


def load_yaml(text: str, path: str) -> list[YAMLValue]:
    return loads_yaml_all(text, what=str(path), error=CheckInputError)


def is_file(p: Path) -> bool:
    """``Path.is_file`` that says False for names the OS refuses (too long, NUL bytes) instead of raising."""
    try:
        return Path(p).is_file()
    except (OSError, ValueError):
        return False


def type_error(path: str, what: str, expected: str, got: YAMLValue) -> CheckInputError:
    """``expected``: already in the current language (``_("an integer")``...)."""
    return CheckInputError(_("{path}: {what} must be {expected}, not {type} ({value})").format(
        path=path, what=what, expected=expected, type=type(got).__name__, value=repr(got)[:60]),
        fix=_("write {what} as {expected}").format(what=what, expected=expected))


def int_field(path: str, what: str, v: YAMLValue, *, default: int | None = None) -> int | None:
    if v is None:
        return default

    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise type_error(path, what, _("an integer"), v)
    try:
        return as_int(what, v, lo=0, hi=1_000_000)
    except InputError as e:
        raise CheckInputError(_("{path}: {what} must be an integer in [0, 1000000] ({error})").format(
            path=path, what=what, error=e.message), fix=_("write {what} as a whole number").format(what=what)) from None


def plan_facts(line: str) -> dict | None:
    """The machine-readable ``trainfit-plan {...}`` header line (what render wrote), or None."""
    if not line.startswith("trainfit-plan {") or len(line) > 8192:
        return None
    try:
        d = json.loads(line[len("trainfit-plan "):])
    except (ValueError, RecursionError):
        return None
    return d if isinstance(d, dict) else None


def add_script(f: JobFacts, where: str, text: str) -> None:
    if not isinstance(text, str):
        raise type_error(f.path, where, _("a string"), text)
    f.scripts.append((where, parse_script(text)))


def region_of_image(f: JobFacts, image: str) -> None:
    m = _REGION_IN_IMAGE.search(image)
    if m:
        f.regions[_("image {image}").format(image=image)] = m.group(1)
