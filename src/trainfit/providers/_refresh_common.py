"""Shared pieces of the cloud refresh commands: a total deadline, error classification, cache writing.

Every refresh classifies a failure into one of: missing credentials, refused credentials, throttling or
quota, timeout, network error (connection refused, DNS, TLS, reset), malformed answer, or other API
error, each a :class:`~trainfit.errors.CatalogError` with a fix. A network error is never reported as a
quota problem and vice versa.
"""

from __future__ import annotations

import datetime as _dt
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, TypeVar

from trainfit.errors import CatalogError, NetworkError, TrainfitError
from trainfit.i18n import _, translate
from trainfit.catalog import reset_cache, GPU_COLUMNS, INSTANCE_COLUMNS, parse_row, to_csv_value
from trainfit.catalog.prices import reset_price_cache, parse_price_rows
from trainfit.catalog.cache import CACHE_FORMAT, write_cache_atomic
from trainfit.catalog.gpus import normalize_gpu_name
from trainfit.providers._net import call_with_deadline
from trainfit.json_types import JSONLike, JSONObject

if TYPE_CHECKING:
    from trainfit.catalog import GPU, Column

T = TypeVar("T")


def short(e: BaseException | str, n: int = 300) -> str:
    s = " ".join(str(e).split())
    return s if len(s) <= n else s[: n - 3] + "..."


@dataclass(kw_only=True)
class Deadline:
    """A total time budget for one refresh (all pages and all calls together)."""

    total_s: float
    """Seconds for the whole refresh."""
    per_call_s: float
    """Upper bound of one call's connect/read timeout, in seconds."""
    what: str
    """API name for messages, e.g. ``ECS DescribeInstanceTypes in cn-hangzhou``."""
    started: float = 0.0

    def __post_init__(self) -> None:
        if not self.total_s > 0 or not self.per_call_s > 0:
            raise CatalogError(_("{what}: timeouts must be positive").format(what=self.what),
                               fix=_("pass a positive --timeout"))
        self.started = time.monotonic()

    def remaining_s(self) -> float:
        return self.total_s - (time.monotonic() - self.started)

    def call_timeout_s(self) -> float:
        """Timeout for the next call; raises a timeout error when the budget is spent."""
        left = self.remaining_s()
        if left <= 0.05:
            raise NetworkError(_("{what} timed out: the whole refresh took more than {total_s:g} s").format(
                what=self.what, total_s=self.total_s),
                fix=_("retry with a larger --timeout, or limit the instance types; the cache was left as it was"))
        return min(self.per_call_s, left)

    def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` bounded by the time left of the whole refresh: a watchdog cuts off a server that trickles bytes
        (each read succeeds, so per-call socket timeouts alone never fire)."""
        return call_with_deadline(fn, timeout_s=max(0.05, self.remaining_s()), what=self.what,
                                  fix=_("check the network/proxy and --endpoint, or retry with a larger "
                                        "--total-timeout; the cache was left as it was"))


_NETWORK_NEEDLES = ("connection refused", "connectionerror", "connection reset", "connection aborted",
                    "name or service not known", "nodename nor servname", "temporary failure in name resolution",
                    "failed to resolve", "no route to host", "network is unreachable", "remote end closed",
                    "max retries exceeded", "newconnectionerror", "ssl", "certificate", "eof occurred",
                    "remotedisconnected", "broken pipe", "cannot connect", "connect call failed")
_THROTTLE_NEEDLES = ("throttl", "quota", "flow control", "requestlimitexceeded", "limitexceeded",
                     "too many requests", "servicebusy")
_AUTH_NEEDLES = ("accesskey", "signature", "forbidden", "unauthorized", "noauth", "nopermission",
                 "authfailure", "secretid", "invalidcredential", "sts token", "unauthorizedoperation")


def classify(e: BaseException, *, what: str, timeout_s: float, cred_fix: str) -> TrainfitError:
    """One error for an exception raised by an official SDK during ``what``: a
    :class:`~trainfit.errors.NetworkError` when the service was not reached or did not answer in time, else a
    :class:`CatalogError`."""
    code = str(getattr(e, "code", "") or getattr(e, "get_code", lambda: "")() or "")
    status = getattr(e, "status_code", None) or getattr(e, "statusCode", None)
    text = short(e)
    low = f"{type(e).__name__} {code} {text}".lower()
    if "unable to load credentials" in low or "credentialexception" in type(e).__name__.lower() or \
            "no credential" in low:
        return CatalogError(_("no credentials found for {what}: {error}").format(what=what, error=text),
                            fix=translate(cred_fix))
    if "timed out" in low or "timeout" in low:
        return NetworkError(_("{what} timed out (limit {timeout_s:g} s per call): {error}").format(
            what=what, timeout_s=timeout_s, error=text),
            fix=_("check the network/proxy or retry with a larger --timeout; the cache was left as it was"))
    if any(k in low for k in _NETWORK_NEEDLES) or isinstance(e, (ConnectionError, OSError)) and not code:
        return NetworkError(_("network error calling {what}: {error}").format(what=what, error=text),
                            fix=_("check the network, proxy and --endpoint; the cache was left as it was"))
    if status == 429 or any(k in low for k in _THROTTLE_NEEDLES):
        return CatalogError(_("{what} was throttled or hit an API quota ({code}): {error}").format(
            what=what, code=code or status, error=text),
            fix=_("wait and retry, or limit the instance types; the cache was left as it was"))
    if status in (401, 403) or any(k in low for k in _AUTH_NEEDLES):
        return CatalogError(_("{what} refused the credentials ({code}): {error}").format(
            what=what, code=code or status, error=text), fix=translate(cred_fix))
    if ("parse" in low or "decode" in low) and "json" in low:
        return CatalogError(_("{what} answered something that is not JSON: {error}").format(what=what, error=text),
                            fix=_("check --endpoint/proxy settings; the cache was left as it was"))
    if status is not None or code:
        return CatalogError(_("{what} failed ({code}): {error}").format(what=what, code=code or status, error=text),
                            fix=_("check the region id and the endpoint; the cache was left as it was"))
    return CatalogError(_("{what} failed: {error}").format(what=what, error=f"{type(e).__name__}: {text}"),
                        fix=_("check the network, region id and endpoint; the cache was left as it was"))


def today() -> str:
    return _dt.datetime.now(_dt.timezone.utc).date().isoformat()


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def write_cache(path: Path, *, provider: str, region: str, sdk: str, gpus: list[dict[str, str]] | None = None,
                instances: list[dict[str, str]] | None = None, prices: list[dict[str, str]] | None = None,
                extra: Mapping[str, JSONLike] | None = None) -> str:
    """Validate nothing more and write a ``trainfit-refresh/1`` cache atomically; returns fetched_at.

    Callers validate every row before calling this (nothing is written on any problem). ``extra``: more top-level
    keys (metadata such as a price list's version; readers ignore keys they do not know).
    """
    fetched = now_iso()
    payload: dict[str, JSONLike] = {"format": CACHE_FORMAT, "provider": provider, "region": region,
                               "fetched_at": fetched, "sdk": sdk, "gpus": gpus or [], "instances": instances or []}
    if prices is not None:
        payload["prices"] = prices
    for k, v in (extra or {}).items():
        payload.setdefault(k, v)
    write_cache_atomic(path, payload)
    reset_cache()
    reset_price_cache()
    return fetched


def sdk_version(dist: str) -> str:
    try:
        from importlib.metadata import version

        return f"{dist} {version(dist)}"
    except Exception:  # noqa: BLE001
        return dist


def resolve_gpu(spec: str | None, mem_gib: float | None, index: dict[str, GPU]) -> tuple[GPU | None, str]:
    """(catalog GPU or None, note) for a GPU name reported by a cloud API plus its per-GPU memory (GiB).

    A bare family name resolves to the catalog's flagship variant (``A100`` -> the 80 GB SXM part), which is
    wrong when the API reports 40 GB; so the reported memory must agree with the catalog row (within
    2 GiB), else ``<name>-<memory>GB`` is tried, else no GPU is assigned (the note says why).
    """
    if not spec or not spec.strip():
        return None, ""
    known = index.get(normalize_gpu_name(spec))
    if known is None:
        return None, ""
    if mem_gib is None or not mem_gib or known.mem_gib is None or abs(known.mem_gib - mem_gib) <= 2:
        return known, ""
    alt = index.get(normalize_gpu_name(f"{spec}-{int(round(mem_gib))}GB"))
    if alt is not None and alt.mem_gib is not None and abs(alt.mem_gib - mem_gib) <= 2:
        return alt, f"{spec!r} with {mem_gib:g} GiB read as {alt.name}"
    return None, (f"{spec!r} resolves to {known.name} ({known.mem_gib:g} GiB) but the API reports {mem_gib:g} GiB: "
                  "gpu left unset")


def check_schema(what: str, instances: list[dict[str, str]], gpus: list[dict[str, str]], *,
                 gpu_columns: Callable[[Mapping[str, object]], tuple[Column, ...]] | None = None) -> None:
    """Check converted rows against the catalog schema (ranges, enums) before anything is written; one
    CatalogError ``<what> returned values outside the catalog schema`` listing every problem.

    ``gpu_columns(row)`` gives the columns a GPU row is checked against (default: all GPU columns).
    """
    problems: list[str] = []
    for r in instances:
        problems += parse_row(INSTANCE_COLUMNS, r, f"instance {r['instance_type']}")[1]
    for g in gpus:
        problems += parse_row(gpu_columns(g) if gpu_columns else GPU_COLUMNS, g, f"gpu {g['name']}")[1]
    if problems:
        raise CatalogError(_("{what} returned values outside the catalog schema:").format(what=what) + "\n  "
                           + "\n  ".join(problems), fix=_("the cache was left as it was"))


def reported_gpu(spec: str | None, mem_gib: float | None, index: dict, new_gpus: dict[str, dict[str, str]], *,
                 source: str, as_of: str, notes: str) -> tuple[str, str]:
    """(catalog GPU name or "", note) for a GPU reported by a cloud API (see :func:`resolve_gpu`).

    A name the catalog does not know becomes a new unverified GPU row in ``new_gpus`` (keyed by the normalized
    name, memory ``mem_gib``, ``notes`` as given); a known family name whose memory does not match leaves the
    GPU unset.
    """
    known, gnote = resolve_gpu(spec, mem_gib, index)
    if not spec or not spec.strip():
        return "", gnote
    if known is not None:
        return known.name, gnote
    if gnote:
        return "", gnote
    name = spec.strip()
    mem = to_csv_value(mem_gib) if mem_gib else ""
    new_gpus.setdefault(normalize_gpu_name(name), {
        "name": name, "vendor": "nvidia" if "nvidia" in spec.lower() else "unknown", "mem_gb_marketed": mem,
        "mem_gib": mem, "verified": "no", "source": source, "as_of": as_of, "notes": notes})
    return name, gnote


def wanted_types(in_catalog: list[tuple[str, str]], asked: list[str] | None) -> list[tuple[str, str]]:
    """(instance type, resource class) to price: ``asked`` (a type the catalog lacks gets class ``ecs``), or
    all of ``in_catalog`` when nothing was asked."""
    known = {t.lower(): (t, rc) for t, rc in in_catalog}
    return [known.get(t.lower(), (t, "ecs")) for t in asked] if asked else list(known.values())


def write_price_cache(path: Path, price_rows: list[JSONObject], *, label: str, provider: str, region: str,
                      sdk: str, schema_what: str, schema_fix: str, empty: str, empty_fix: str,
                      extra: Mapping[str, JSONLike] | None = None) -> tuple[int, str]:
    """Validate ``price_rows`` against the price schema (CatalogError ``<schema_what> returned values outside
    the price schema`` listing every problem; ``empty`` when no row is left) and write them; returns (rows,
    fetched_at)."""
    rows, problems = parse_price_rows(price_rows, label)
    if problems:
        raise CatalogError(_("{what} returned values outside the price schema:").format(what=schema_what) + "\n  "
                           + "\n  ".join(problems), fix=translate(schema_fix))
    if not rows:
        raise CatalogError(translate(empty), fix=translate(empty_fix))
    stored = [{k: to_csv_value(v) for k, v in r.items()} for r in rows]
    return len(rows), write_cache(path, provider=provider, region=region, sdk=sdk, prices=stored, extra=extra)


