"""``trainfit catalog``: show the GPU / instance catalogs, validate an overlay, refresh live PAI specs,
list platform rules."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, NoReturn, Sequence, Union, cast

from trainfit._cli.arguments import add_options
from trainfit._cli.labels import SEVERITY, label, yes_no
from trainfit.command_options import COMMAND_OPTIONS
from trainfit.errors import CatalogError
from trainfit.i18n import N_, _, translate
from trainfit.providers.registry import (CloudRefreshed, PriceListRefreshed, RefreshRequest, RefreshSource,
                                         SpecsRefreshed, refresh_source, refresh_sources)

if TYPE_CHECKING:
    from trainfit.catalog.gpus import GPU
    from trainfit.catalog.instances import Instance

#: One cell of a catalog table (a list is joined with ``;``).
Cell = Union[str, int, float, bool, None, Sequence[str]]


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("catalog", help=_("GPU and instance catalogs: show, validate, refresh, rules"),
                              description=_("GPU and instance catalogs (bundled data + refresh cache + your overlay)."))
    add_options(p, COMMAND_OPTIONS["catalog"])
    sub = p.add_subparsers(dest="catalog_command", metavar="ACTION")

    s = sub.add_parser("show", help=_("print the catalog"))
    add_options(s, COMMAND_OPTIONS["catalog show"])
    s.set_defaults(func=_show)

    v = sub.add_parser("validate", help=_("check an overlay file (and the bundled data); exit 1 listing all problems"))
    add_options(v, COMMAND_OPTIONS["catalog validate"])
    v.set_defaults(func=_validate)

    r = sub.add_parser("refresh", help=_("fetch live specs or prices (PAI-DLC, ECS, Tencent CVM, Alibaba's public "
                                       "price list) into the user cache"))
    add_options(r, COMMAND_OPTIONS["catalog refresh"])
    r.set_defaults(func=_refresh)

    ru = sub.add_parser("rules", help=_("list the platform rules (PAI-DLC, Lingjun...) with sources"))
    add_options(ru, COMMAND_OPTIONS["catalog rules"])
    ru.set_defaults(func=_rules)

    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def _apply_overlay(args: argparse.Namespace) -> None:
    from trainfit.catalog import set_overlay_path

    if getattr(args, "catalog_overlay", None):
        set_overlay_path(args.catalog_overlay)


def _fmt(v: Cell) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return yes_no(v)
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, (list, tuple)):
        return ";".join(map(str, v)) or "-"
    return str(v)


def _table(title: str, columns: list[str], rows: list[list[Cell]], *, whole: tuple[str, ...] = (),
           compact: bool = False) -> None:
    """A rich table; the ``whole`` columns are never broken inside a word (names a user copies); ``compact``:
    no vertical rules (narrow terminals). Column names are message ids (marked with N_), shown translated."""
    from rich import box
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title, show_lines=False, header_style="bold", **({"box": box.SIMPLE_HEAD} if compact else {}))
    for c in columns:
        t.add_column(translate(c), overflow="fold", no_wrap=c in whole)
    for r in rows:
        t.add_row(*[_fmt(x) for x in r])
    Console().print(t)


#: Columns of `catalog show instances` left out below a terminal width (``--json`` has them all): the links and
#: "verified" below 150 columns, the regions (``catalog show prices`` lists them) below 120.
INSTANCE_COLUMNS_BY_WIDTH = ((150, ("intra", "inter", "Gbit/s", "verified")), (120, ("regions",)))
INSTANCES_FULL_WIDTH = 150


def _regions_cell(regions: Sequence[str] | None) -> str:
    """The first region and how many more: a list of twenty regions made every row twenty lines tall."""
    regions = list(regions or ())
    if not regions:
        return "-"
    return regions[0] + (f" +{len(regions) - 1}" if len(regions) > 1 else "")


def _show(args: argparse.Namespace) -> int:
    _apply_overlay(args)
    from trainfit.catalog import list_gpus, list_instances
    from trainfit.catalog import current_catalog

    cat = current_catalog()
    for w in cat.warnings:
        print(_("warning: {text}").format(text=w), file=sys.stderr)
    if args.what == "gpus":
        gpus = list_gpus()
        if args.json:
            json.dump([g.to_dict() for g in gpus], sys.stdout, indent=2, ensure_ascii=False)
            print()
            return 0
        def cell(g: GPU, f: str) -> Cell:  # a figure assumed from speed_from is marked, never shown as the GPU's own
            v = getattr(g, f)
            return f"{_fmt(v)}*" if f in g.assumed and v is not None else v

        cols = [N_("name"), N_("mem GiB"), N_("type"), "GB/s", "bf16 TF", "fp8 TF", "NVLink GB/s", N_("form"),
                N_("verified"), N_("aliases")]
        _table(_("GPUs (dense peaks; mem = nominal GiB)"), cols,
               [[g.name, g.mem_gib, g.mem_type, cell(g, "mem_bandwidth_gbps"), cell(g, "bf16_dense_tflops"),
                 cell(g, "fp8_dense_tflops"), cell(g, "nvlink_gbps"), g.form_factor, g.verified, g.aliases]
                for g in gpus])
        assumed = [g for g in gpus if g.assumed]
        if assumed:
            print(_("* assumed, not published: {which} (speed_from in gpus.csv; docs/catalog.md)").format(
                which="; ".join(_("{gpu} from {source}").format(gpu=g.name, source=g.speed_from) for g in assumed)))
        return 0
    if args.what == "prices":
        return _show_prices(args)
    rows = list_instances(provider=args.provider, resource_class=args.resource_class, gpu=args.gpu)
    if args.json:
        json.dump([r.to_dict() for r in rows], sys.stdout, indent=2, ensure_ascii=False)
        print()
        return 0
    import shutil

    cols = [N_("instance type"), N_("class"), "gpu", "n", "vCPU", "RAM", N_("intra"), N_("inter"), "Gbit/s",
            N_("price/h"), N_("regions"), N_("verified")]
    table = [[r.instance_type, r.resource_class, r.gpu, r.gpu_count, r.vcpu, r.ram_gib, r.intra_node_link,
              r.inter_node, r.inter_node_gbit_per_s, _price_cell(r), _regions_cell(r.regions), r.verified]
             for r in rows]
    width = shutil.get_terminal_size((INSTANCES_FULL_WIDTH, 24)).columns
    dropped = [c for w, cs in INSTANCE_COLUMNS_BY_WIDTH if width < w for c in cs]
    narrow = bool(dropped)
    if narrow:  # readable from 100 columns: names stay whole, the least needed columns go
        keep = [i for i, c in enumerate(cols) if c not in dropped]
        cols = [cols[i] for i in keep]
        table = [[row[i] for i in keep] for row in table]
    _table(_("Instances (- = not known; pay-as-you-go prices only where published or in your overlay: "
             "`catalog show prices` gives sources and dates)"), cols, table,
           whole=("instance type", "class", "gpu", "n", "vCPU", "RAM", "price/h"), compact=narrow)
    if narrow:
        print(_("(narrow terminal: {columns} left out; --json shows all)").format(
            columns=", ".join(translate(c) for c in dropped)))
    return 0


def _price_cell(inst: Instance) -> str | None:
    """Pay-as-you-go price of an instance from the price table or the row itself (``catalog show prices``
    says where it comes from)."""
    from trainfit.catalog.prices import price_for_instance

    p = price_for_instance(inst)
    return None if p is None else f"{p.price_per_hour:g} {p.currency}"


def _show_prices(args: argparse.Namespace) -> int:
    from trainfit.catalog.prices import current_prices, prices_for

    if args.instance_type:
        rows = prices_for(args.provider or "", args.resource_class, args.instance_type, region=args.region,
                          billing=args.billing) if args.provider else [
            r for r in current_prices() if r.instance_type.lower() == args.instance_type.lower()]
    else:
        rows = [r for r in current_prices()
                if (not args.provider or r.provider == args.provider.lower())
                and (not args.resource_class or r.resource_class == args.resource_class.lower())
                and (not args.billing or r.billing == args.billing)
                and (not args.region or r.region in (None, args.region))]
    if args.json:
        json.dump([r.to_dict() for r in rows], sys.stdout, indent=2, ensure_ascii=False)
        print()
        return 0
    _table(_("Prices (per instance-hour, in the source's currency; never converted)"),
           [N_("instance type"), N_("provider"), N_("class"), N_("region"), N_("billing"), N_("price/h"),
            N_("spot paid"), N_("as of"), N_("verified"), N_("source")],
           [[r.instance_type, r.provider, r.resource_class, r.region, r.billing,
             None if r.price_per_hour is None else f"{r.price_per_hour:g} {r.currency}", r.spot_discount,
             r.as_of, r.verified, _short_source(r.source)] for r in rows])
    return 0


def _short_source(src: str, n: int = 48) -> str:
    """The source shortened for a table (``--json`` prints it whole)."""
    from urllib.parse import unquote

    s = unquote(src)
    return s if len(s) <= n else s[: n - 1] + "…"


def _validate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from trainfit.catalog import bundled_rows, overlay_path
    from trainfit.catalog.overlay import validate_overlay
    from trainfit.rules import load_rules

    problems: list[str] = []
    checked: list[str] = []
    from trainfit.catalog.prices import bundled_price_rows

    for what, fn in ((N_("bundled catalog"), bundled_rows), (N_("bundled prices"), bundled_price_rows),
                     (N_("platform rules"), load_rules)):
        try:
            fn()
            checked.append(translate(what))
        except CatalogError as e:
            problems.append(e.message)
    path = args.path
    if path is None:
        _apply_overlay(args)
        ov = overlay_path()
        path = str(ov) if ov else None
    if path is not None:
        missing = _("{path}: no such file").format(path=path)
        try:
            is_file = Path(path).expanduser().is_file()
        except OSError as e:  # a name over the file system's limit (ENAMETOOLONG)
            is_file, missing = False, _("{path}…: cannot be read ({why})").format(path=path[:80], why=e.strerror or e)
        if not is_file:
            problems.append(missing)
        else:
            problems += validate_overlay(path)
            checked.append(str(path))
    if args.json:
        print(json.dumps({"checked": checked, "problems": problems, "ok": not problems}, indent=2))
    elif problems:
        print(_("{n} problem(s):").format(n=len(problems)), file=sys.stderr)
        for p in problems:
            print(f"  - {p}", file=sys.stderr)
    else:
        print(_("ok: {checked}").format(checked=", ".join(checked)))
    return 1 if problems else 0


def _request(args: argparse.Namespace) -> RefreshRequest:
    return RefreshRequest(region=args.region or "", prices=args.prices, instance_types=args.instance_types,
                          site=args.site, url=args.url, zone=args.zone, image_id=args.image_id, currency=args.currency,
                          endpoint=args.endpoint, protocol=args.protocol, timeout_s=args.timeout,
                          total_timeout_s=args.total_timeout)


def _misuse(source: RefreshSource) -> NoReturn:
    message, fix = source.misuse or ("", "")
    raise CatalogError(translate(message), fix=translate(fix))


def _refresh(args: argparse.Namespace) -> int:
    """``catalog refresh --provider NAME``: the registry's refresh source of that name (``RefreshSource``)."""
    source = refresh_source(args.provider)
    if source is None:  # argparse's choices were read when the parser was built
        raise CatalogError(_("refresh is not available for provider {provider!r}").format(provider=args.provider),
                           fix=_("use --provider pai; for other clouds add rows to your overlay"))
    if source.kind == "public" or args.public_prices:
        return _refresh_public(args, source)
    if args.url:
        raise CatalogError(_("--url only applies to --public-prices"),
                           fix=_("use --endpoint for an API endpoint, or add --provider alibaba --public-prices"))
    if not args.region:
        raise CatalogError(_("--provider {provider} refresh needs --region").format(provider=args.provider),
                           fix=_("pass --region, e.g. cn-hangzhou (or --provider alibaba --public-prices for every "
                                 "region's list price)"))
    if source.kind == "cloud":
        return _refresh_cloud(args, source)
    if args.prices:
        return _misuse(source)
    res = cast(SpecsRefreshed, source.load()(_request(args)))
    if args.json:
        print(json.dumps({"provider": res.provider, "region": res.region, "path": str(res.path),
                          "instances": res.instances, "new_gpus": list(res.new_gpus),
                          "fetched_at": res.fetched_at}, indent=2))
    else:
        print(_("{n} GPU instance types from PAI-DLC ListEcsSpecs ({region}) cached in {path}").format(
            n=res.instances, region=res.region, path=res.path))
        if res.new_gpus:
            print(_("GPU types not in the catalog (memory only, compute unknown): {gpus}").format(
                gpus=", ".join(res.new_gpus)))
    return 0


def _refresh_public(args: argparse.Namespace, source: RefreshSource) -> int:
    """``--provider NAME --public-prices`` (``alibaba``: Alibaba's public ECS price list) into the user cache."""
    if source.kind != "public" or not args.public_prices:
        return _misuse(source if source.kind == "public" else
                       next(r for r in refresh_sources() if r.kind == "public"))
    if args.region or args.prices or args.endpoint:
        raise CatalogError(_("--public-prices reads every region from one file: --region, --prices and --endpoint "
                             "do not apply"), fix=_("drop them (plan --region picks the region's price afterwards); "
                                                    "--url reads another copy of the list"))
    res = cast(PriceListRefreshed, source.load()(_request(args)))
    out = {"provider": source.name, "site": res.site, "path": str(res.path), "url": res.url, "version": res.version,
           "publication_date": res.publication_date, "currency": res.currency, "prices": res.prices,
           "regions": list(res.regions), "instance_types": res.instance_types, "missing": list(res.missing),
           "fetched_at": res.fetched_at, "found_via": res.how}
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(_("{prices} price rows ({types} instance types x {regions} regions, {currency}) from {url} cached in "
            "{path}").format(prices=res.prices, types=res.instance_types, regions=len(res.regions),
                             currency=res.currency, url=res.url, path=res.path))
    print(_("price list version {version}, {published}; found via {how}").format(
        version=res.version or _("not stated"), published=_published(res.publication_date), how=res.how))
    if res.missing:
        print(_("not in the {site} site's list ({n}): {types}").format(
            site=res.site, n=len(res.missing), types=", ".join(res.missing[:12]) + (" ..." if len(res.missing) > 12
                                                                                   else "")))
    return 0


def _published(date: str | None) -> str:
    """'published 2026-11-20 (16 days ago)', with a warning when the list is old."""
    import datetime as dt

    if not date:
        return _("publication date not stated (prices dated today)")
    days = (dt.date.today() - dt.date.fromisoformat(date)).days
    if days > 180:
        return _("published {date} ({days} days ago; an old list: pass --url with the link the ECS pricing page uses "
                 "today)").format(date=date, days=days)
    return _("published {date} ({days} days ago)").format(date=date, days=days)


def _refresh_cloud(args: argparse.Namespace, source: RefreshSource) -> int:
    res = cast(CloudRefreshed, source.load()(_request(args)))
    api = source.price_api if args.prices else source.api
    out = {"provider": args.provider, "region": res.region, "path": str(res.path), "instances": res.instances,
           "new_gpus": list(res.new_gpus), "prices": res.prices, "skipped": list(res.skipped),
           "fetched_at": res.fetched_at}
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    what = _("{n} price rows").format(n=res.prices) if args.prices else \
        _("{n} GPU instance types").format(n=res.instances)
    print(_("{what} from {api} ({region}) cached in {path}").format(what=what, api=api, region=res.region,
                                                                   path=res.path))
    if res.new_gpus:
        print(_("GPU types not in the catalog (memory only, compute unknown): {gpus}").format(
            gpus=", ".join(res.new_gpus)))
    if res.skipped:
        print(_("not sold in {region} (skipped): {types}").format(region=res.region, types=", ".join(res.skipped)))
    return 0


def _rules(args: argparse.Namespace) -> int:
    from trainfit.rules import load_rules, rules_for_claim

    rules = rules_for_claim(args.claim) if args.claim else list(load_rules())
    if args.json:
        json.dump([{"id": r.id, "title": r.title, "applies_to": list(r.applies_to), "kind": r.kind,
                    "params": r.params, "severity": r.severity, "why": r.why, "fix": r.fix, "source": r.source,
                    "verified": r.verified, "as_of": r.as_of, "claims": list(r.claims), "verdict": r.verdict}
                   for r in rules], sys.stdout, indent=2, ensure_ascii=False)
        print()
        return 0
    _table(_("Platform rules"), ["id", N_("applies to"), N_("severity"), N_("rule"), N_("claims"), N_("verified"),
                                 N_("source")],
           [[r.id, r.applies_to, label(SEVERITY, r.severity), translate(r.title),
             ", ".join(f"{c}: {r.verdict}" if r.verdict else c for c in r.claims) or None, r.verified, r.source]
            for r in rules])
    return 0
