"""Column schemas of the catalogs, shared by the bundled CSVs, the user overlay (YAML) and the refresh cache.

A row arrives as a mapping of column name to value. CSV values are strings ("" = unknown); YAML values may
already be numbers, booleans or lists. :func:`parse_row` turns either into typed Python values and returns
every problem it finds (it never stops at the first), so ``trainfit catalog validate`` can list them all.

Units are part of the column names: ``*_gib`` = gibibytes (2**30 bytes), ``*_gbps`` in gpus.csv =
gigabytes per second (GB/s, as NVIDIA datasheets state memory and NVLink bandwidth), ``*_gbit_per_s`` =
gigabits per second (network links), ``*_tflops`` = 10**12 floating-point operations per second,
``price_per_hour`` in ``currency`` units per instance-hour.
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping, TypeAlias, TypedDict

from trainfit.i18n import _
from trainfit.providers.registry import provider_names, resource_classes
from trainfit.inputs import InputError, as_float, as_int

if TYPE_CHECKING:
    from typing import Unpack  # Python 3.11+: only for the checker (annotations are not evaluated)

#: Currencies a price may be stated in (ISO 4217).
CURRENCIES = ("CNY", "USD", "EUR", "SGD", "HKD", "JPY", "GBP")

MEM_TYPES = ("GDDR5", "GDDR6", "GDDR6X", "GDDR7", "HBM2", "HBM2e", "HBM3", "HBM3e")
FORM_FACTORS = ("pcie", "sxm2", "sxm4", "sxm5", "oam", "other")
INTRA_NODE_LINKS = ("nvlink", "pcie", "none")
INTER_NODE = ("rdma", "tcp", "none")

#: The typed value of one catalog cell (:func:`parse_row`): text (names, dates, choices), a number, yes/no, a list
#: (a tuple of text) or unknown (None).
Cell: TypeAlias = str | int | float | bool | tuple[str, ...] | None
#: One typed catalog row (a GPU, an instance or a price): column name -> value.
CatalogRow: TypeAlias = dict[str, Cell]


def __getattr__(name: str) -> tuple[str, ...]:
    """``PROVIDERS`` / ``RESOURCE_CLASSES``: the registered providers and their resource classes, read from
    :mod:`trainfit.providers.registry` each time."""
    if name == "PROVIDERS":
        return provider_names()
    if name == "RESOURCE_CLASSES":
        return resource_classes()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True, kw_only=True)
class Column:
    """One column: its type, whether it must be filled, and an optional range or choice check."""

    name: str
    kind: str  # str | float | int | bool | date | list | enum
    required: bool = False
    choices: tuple[str, ...] | Callable[[], tuple[str, ...]] = ()
    """The values of an ``enum``, or a function giving them when a registry holds them (``provider``,
    ``resource_class``: :mod:`trainfit.providers.registry`)."""
    min: float | None = None
    max: float | None = None
    unit: str = ""
    help: str = ""
    ident: str = ""
    """A strict pattern of :data:`trainfit.inputs.PATTERNS` every value (every list item) must match: names that
    reach job files and scripts carry no shell or YAML metacharacters."""


class _ColumnOptions(TypedDict, total=False):
    required: bool
    choices: tuple[str, ...] | Callable[[], tuple[str, ...]]
    min: float | None
    max: float | None
    unit: str
    help: str
    ident: str


def _c(name: str, kind: str, **kw: Unpack[_ColumnOptions]) -> Column:
    return Column(name=name, kind=kind, **kw)


GPU_COLUMNS: tuple[Column, ...] = (
    _c("name", "str", required=True, ident="gpu", help="canonical name, e.g. A100-80GB-SXM"),
    _c("aliases", "list", help="other names, semicolon-separated (nvidia-smi names, short names)"),
    _c("vendor", "str", help="nvidia, or unknown for cloud code names"),
    _c("arch", "str", help="architecture (volta, ampere, hopper, ada...)"),
    _c("form_factor", "enum", choices=FORM_FACTORS),
    _c("mem_gb_marketed", "float", min=1, max=4096, unit="GB (as printed on the datasheet)"),
    _c("mem_gib", "float", min=1, max=4096, unit="GiB",
       help="nominal device memory in GiB (the datasheet's GB read as binary GiB; see docs/catalog.md)"),
    _c("mem_type", "enum", choices=MEM_TYPES),
    _c("mem_bandwidth_gbps", "float", min=10, max=100_000, unit="GB/s"),
    _c("bf16_dense_tflops", "float", min=0.1, max=100_000, unit="TFLOP/s, dense (no sparsity)"),
    _c("fp16_dense_tflops", "float", min=0.1, max=100_000, unit="TFLOP/s, dense (no sparsity)"),
    _c("fp8_dense_tflops", "float", min=0.1, max=100_000, unit="TFLOP/s, dense (no sparsity)"),
    _c("nvlink_gbps", "float", min=1, max=100_000, unit="GB/s per GPU, bidirectional; empty = none"),
    _c("pcie_gen", "int", min=1, max=7),
    _c("pai_codes", "list", ident="gpu", help="Alibaba PAI GPU code names this row stands for (GU30...)"),
    _c("verified", "bool", required=True, help="yes = numbers checked against the cited source"),
    _c("source", "str", required=True, help="URL(s) or document the numbers come from"),
    _c("as_of", "date", required=True, help="date the row was compiled (YYYY-MM-DD)"),
    _c("notes", "str"),
    _c("speed_from", "str", ident="gpu",
       help="for a GPU known only by its memory (model not published): the GPU row whose speed figures (arch, "
            "TFLOP/s, NVLink, PCIe) are assumed for it where its own are empty; every plan on it says so"),
)

INSTANCE_COLUMNS: tuple[Column, ...] = (
    _c("provider", "enum", required=True, choices=provider_names),
    _c("resource_class", "enum", required=True, choices=resource_classes),
    _c("instance_type", "str", required=True, ident="instance_type", help="the provider's exact spec name"),
    _c("gpu", "str", ident="gpu", help="a name or alias in the GPU catalog; empty = model not documented"),
    _c("gpu_count", "int", min=0, max=1024),
    _c("vcpu", "int", min=1, max=4096),
    _c("ram_gib", "float", min=0.5, max=65_536, unit="GiB"),
    _c("intra_node_link", "enum", choices=INTRA_NODE_LINKS),
    _c("inter_node", "enum", choices=INTER_NODE),
    _c("inter_node_gbit_per_s", "float", min=0.1, max=100_000, unit="Gbit/s per node"),
    _c("regions", "list", ident="region", help="region ids, semicolon-separated; empty = not documented"),
    _c("price_per_hour", "float", min=0, max=1_000_000, unit="currency per instance-hour"),
    _c("currency", "enum", choices=CURRENCIES),
    _c("spot_discount", "float", min=0, max=1, unit="fraction of the list price paid on spot (0-1)"),
    _c("verified", "bool", required=True, help="yes = the instance name and its numbers were checked"),
    _c("source", "str", required=True),
    _c("as_of", "date", required=True),
    _c("notes", "str"),
)


def _as_text(v: object) -> str:
    return "" if v is None else str(v).strip()


def _is_empty(v: object) -> bool:
    if v is None:
        return True
    if isinstance(v, str):
        return v.strip() == ""
    if isinstance(v, (list, tuple)):
        return len(v) == 0
    return False


def _parse_float(v: object) -> float:
    """A finite number through the input gate (ASCII digits only; no inf/nan, no 5,000-digit integers)."""
    try:
        x = as_float("value", v)
    except InputError as e:
        raise ValueError(e.message.removeprefix("value: ")) from None
    if not math.isfinite(x):  # pragma: no cover - as_float refuses these
        raise ValueError(_("not a finite number"))
    return x


def _parse_int(v: object) -> int:
    try:
        return as_int("value", v, lo=None)
    except InputError as e:
        raise ValueError(e.message.removeprefix("value: ")) from None


def _parse_bool(v: object) -> bool:
    if isinstance(v, bool):
        return v
    t = str(v).strip().lower()
    if t in ("yes", "true", "1", "y"):
        return True
    if t in ("no", "false", "0", "n"):
        return False
    raise ValueError(_("use yes or no"))


def _parse_date(v: object) -> str:
    if isinstance(v, _dt.datetime):
        return v.date().isoformat()
    if isinstance(v, _dt.date):
        return v.isoformat()
    return _dt.date.fromisoformat(str(v).strip()).isoformat()


def _parse_list(v: object) -> tuple[str, ...]:
    if isinstance(v, (list, tuple)):
        items = [str(x).strip() for x in v]
    else:
        items = [x.strip() for x in str(v).split(";")]
    return tuple(x for x in items if x)


_PARSERS: dict[str, Callable[[object], Cell]] = {
    "str": _as_text,
    "float": _parse_float,
    "int": _parse_int,
    "bool": _parse_bool,
    "date": _parse_date,
    "list": _parse_list,
}


def parse_row(columns: tuple[Column, ...], raw: Mapping[str, object], where: str) -> tuple[CatalogRow, list[str]]:
    """Typed values for ``raw`` (unknown -> None, lists -> tuple) and the list of problems found.

    ``where`` prefixes each problem (``gpus.csv row 4`` or ``overlay.yaml instances[2]``).
    """
    out: CatalogRow = {}
    problems: list[str] = []
    known = {c.name for c in columns}
    for key in raw:
        if key not in known:
            problems.append(_("{where}: unknown column {key!r} (known: {names})").format(
                where=where, key=key, names=", ".join(sorted(known))))
    for col in columns:
        v = raw.get(col.name)
        if _is_empty(v):
            if col.required:
                problems.append(_("{where}: {column} is required").format(where=where, column=col.name))
            out[col.name] = () if col.kind == "list" else None
            continue
        try:
            if col.kind == "enum":
                text = _as_text(v)
                choices = col.choices() if callable(col.choices) else col.choices
                match = {c.lower(): c for c in choices}.get(text.lower())
                if match is None:
                    raise ValueError(_("must be one of {names}").format(names=", ".join(choices)))
                val: Cell = match
            else:
                val = _PARSERS[col.kind](v)
        except (ValueError, TypeError) as e:
            problems.append(f"{where}: {col.name}={v!r}: {e}")
            out[col.name] = () if col.kind == "list" else None
            continue
        if col.ident:
            from trainfit.inputs import PATTERNS

            bad = [x for x in (val if isinstance(val, tuple) else (val,)) if not PATTERNS[col.ident].fullmatch(x)]
            if bad:
                problems.append(_("{where}: {column}={value!r}: use letters, digits, '.', '_' and '-' only (no spaces, "
                                  "quotes or shell characters)").format(where=where, column=col.name,
                                                                        value=str(bad[0])[:60]))
                out[col.name] = () if col.kind == "list" else None
                continue
        if col.kind in ("float", "int"):
            if col.min is not None and val < col.min:
                problems.append(_("{where}: {column}={value} is below {limit} {unit}").format(
                    where=where, column=col.name, value=val, limit=col.min, unit=col.unit).rstrip())
            if col.max is not None and val > col.max:
                problems.append(_("{where}: {column}={value} is above {limit} {unit}").format(
                    where=where, column=col.name, value=val, limit=col.max, unit=col.unit).rstrip())
        out[col.name] = val
    return out, problems


def to_csv_value(v: Cell) -> str:
    """Inverse of :func:`parse_row` for one value (used when writing caches and in ``--json``)."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (list, tuple)):
        return ";".join(str(x) for x in v)
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)
