"""The user overlay: a YAML file with ``gpus:`` and/or ``instances:`` lists merged over the bundled catalog.

Example (``~/.config/trainfit/catalog.yaml``)::

    gpus:
      - name: MyCo-A100
        aliases: [myco-a100]
        mem_gb_marketed: 80
        mem_gib: 80
        mem_bandwidth_gbps: 2039
        bf16_dense_tflops: 312
        verified: no
        source: our hardware inventory
        as_of: 2026-11-30
    instances:
      - provider: alibaba                 # key = provider + resource_class + instance_type
        resource_class: pai-public
        instance_type: ecs.gn7i-c8g1.2xlarge
        price_per_hour: 12.5              # only the fields you state are replaced
        currency: CNY
        source: our Alibaba bill, November 2026
        as_of: 2026-11-30
      - provider: private
        resource_class: private
        instance_type: lab-8xa100
        gpu: A100-80GB-SXM
        gpu_count: 8
        intra_node_link: nvlink
        inter_node: rdma
        inter_node_gbit_per_s: 800
        verified: yes
        source: lab wiki
        as_of: 2026-11-30

A row whose key already exists updates only the fields it states, and must carry ``source`` and
``as_of`` (every fact has a source and a date). A new row must pass the full schema. Files are read
with ``yaml.safe_load`` only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from trainfit.catalog._schema import GPU_COLUMNS, INSTANCE_COLUMNS, CatalogRow, Column, parse_row
from trainfit.errors import CatalogError
from trainfit.i18n import _
from trainfit.inputs import loads_yaml_all, read_text_file
from trainfit.json_types import YAMLValue
from trainfit.catalog._store import bundled_rows, gpu_key, instance_key, cross_check, merge_rows
from trainfit.catalog.prices import overlay_price_rows

_TOP_KEYS = ("gpus", "instances", "prices")  # prices: parsed by trainfit.catalog.prices


@dataclass(frozen=True, kw_only=True)
class Overlay:
    path: str
    gpus: list[tuple[CatalogRow, set[str]]] = field(default_factory=list)
    """(typed row, names of the fields the file states)."""
    instances: list[tuple[CatalogRow, set[str]]] = field(default_factory=list)


def _relaxed(columns: tuple[Column, ...], keep_required: set[str]) -> tuple[Column, ...]:
    from dataclasses import replace

    return tuple(c if c.name in keep_required else replace(c, required=False) for c in columns)


#: Largest overlay read (a hand-written overlay is a few KB; a 30 MB one would slow every command).
MAX_OVERLAY_BYTES = 1 * 2**20


def _loader():
    """``yaml.SafeLoader`` with dates kept as strings (so the schema reports bad ones itself)."""
    import yaml

    class _Loader(getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader):  # type: ignore[misc]
        pass

    _Loader.add_constructor("tag:yaml.org,2002:timestamp", yaml.SafeLoader.construct_yaml_str)
    return _Loader


def safe_load_yaml(text: str) -> YAMLValue:
    """``yaml.safe_load`` semantics through the input gate (no aliases, depth limit), dates kept as strings."""
    docs = loads_yaml_all(text, what=_("catalog overlay"), error=CatalogError, loader=_loader())
    if len(docs) > 1:
        raise CatalogError(_("catalog overlay holds more than one YAML document"), fix=_("keep one document"))
    return docs[0] if docs else None


def _read_yaml(path: Path) -> tuple[YAMLValue, list[str]]:
    try:
        text = read_text_file(path, max_bytes=MAX_OVERLAY_BYTES, what=_("catalog overlay"), error=CatalogError,
                              fix=_("fix or remove the overlay file"))
        docs = loads_yaml_all(text, what=f"{path}", error=CatalogError, loader=_loader())
    except CatalogError as e:
        return None, [e.message.replace(": malformed YAML", ": not valid YAML", 1)]
    if len(docs) > 1:
        return None, [_("{path}: holds {n} YAML documents; an overlay is one mapping").format(path=path, n=len(docs))]
    return (docs[0] if docs else None), []


def parse_overlay(path: str | Path, *, known_gpu_keys: set[str] | None = None,
                  known_instance_keys: set[tuple[str, str, str]] | None = None) -> tuple[Overlay, list[str]]:
    """Parse and validate one overlay file; returns the overlay and every problem found (no raise)."""
    path = Path(path).expanduser()
    if known_gpu_keys is None or known_instance_keys is None:
        g_base, i_base = bundled_rows()
        known_gpu_keys = {gpu_key(r) for r in g_base} if known_gpu_keys is None else known_gpu_keys
        known_instance_keys = ({instance_key(r) for r in i_base} if known_instance_keys is None
                               else known_instance_keys)
    data, problems = _read_yaml(path)
    ov = Overlay(path=str(path))
    if problems:
        return ov, problems
    if data is None:
        return ov, []  # an empty file is a valid, empty overlay
    if not isinstance(data, dict):
        return ov, [_("{path}: top level must be a mapping with 'gpus:' and/or 'instances:' lists").format(path=path)]
    for k in data:
        if k not in _TOP_KEYS:
            problems.append(_("{path}: unknown top-level key {key!r} (use {names})").format(
                path=path, key=k, names=_(" or ").join(_TOP_KEYS)))
    specs = (("gpus", GPU_COLUMNS, {"name", "source", "as_of"}, gpu_key, known_gpu_keys, ov.gpus),
             ("instances", INSTANCE_COLUMNS, {"provider", "resource_class", "instance_type", "source", "as_of"},
              instance_key, known_instance_keys, ov.instances))
    for section, columns, update_required, key_fn, known, sink in specs:
        items = data.get(section)
        if items is None:
            continue
        if not isinstance(items, list):
            problems.append(_("{path}: '{section}' must be a list of mappings").format(path=path, section=section))
            continue
        for i, raw in enumerate(items):
            where = f"{path.name} {section}[{i}]"
            if not isinstance(raw, dict):
                problems.append(_("{where}: must be a mapping of column: value").format(where=where))
                continue
            raw = {str(k): v for k, v in raw.items()}
            # Parse the key fields first to know whether this updates an existing row.
            probe, _probs = parse_row(_relaxed(columns, set()), raw, where)
            is_update = key_fn(probe) in known
            cols = _relaxed(columns, update_required) if is_update else columns
            row, probs = parse_row(cols, raw, where)
            problems.extend(probs)
            present = {c.name for c in columns if c.name in raw}
            sink.append((row, present))
    return ov, problems


def validate_overlay(path: str | Path) -> list[str]:
    """Every problem of ``path`` on its own and merged with the bundled catalog (empty list = valid)."""
    ov, problems = parse_overlay(path)

    try:
        overlay_price_rows(Path(path).expanduser())
    except CatalogError as e:
        problems = problems + e.message.split("\n  ")[1:]
    if problems:
        return problems
    g_base, i_base = bundled_rows()
    g_rows = merge_rows(list(g_base), [(r, p, "overlay") for r, p in ov.gpus], gpu_key)
    i_rows = merge_rows(list(i_base), [(r, p, "overlay") for r, p in ov.instances], instance_key)
    return cross_check([r for r, _o in g_rows], [r for r, _o in i_rows], Path(path).name)


def load_overlay(path: str | Path, *, known_gpu_keys: set[str], known_instance_keys: set[tuple[str, str, str]]
                 ) -> Overlay:
    """Parsed overlay; raises :class:`CatalogError` listing every problem."""
    ov, problems = parse_overlay(path, known_gpu_keys=known_gpu_keys, known_instance_keys=known_instance_keys)
    if problems:
        raise CatalogError(_("catalog overlay {path!r} does not validate:").format(path=str(path)) + "\n  "
                           + "\n  ".join(problems),
                           fix=_("run `trainfit catalog validate {path}` after fixing it").format(path=path))
    return ov
