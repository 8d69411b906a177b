"""Preemption notices: where each cloud announces that a spot instance is about to be reclaimed.

:data:`PROVIDERS` is data, one row per cloud, each with its public source. A notice source is polled by
:class:`MetadataPoller` (one HTTP GET, or two for AWS IMDSv2) or :class:`FilePoller` (``--notice-file``);
SIGTERM is handled by the runner itself. Tests never reach a cloud address: they use ``--notice-file`` or
``--metadata-url`` pointing at a server on 127.0.0.1.
"""

from __future__ import annotations

import json
import http.client
import os
import stat
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from trainfit.errors import WatchError
from trainfit.i18n import _


@dataclass(frozen=True, kw_only=True)
class NoticeSource:
    """How one cloud tells a spot/preemptible instance that it will be reclaimed."""

    provider: str
    """Short name used by ``--provider``."""
    url: str
    """Metadata URL polled from inside the instance."""
    lead_seconds: float | None
    """Documented time between the notice and the reclaim (the budget for checkpoint + exit); None when the
    source does not state one (the body's time is used, else ``watch --lead-seconds``)."""
    notice_when: str
    """What the endpoint returns when a reclaim is scheduled (and otherwise)."""
    headers: tuple[tuple[str, str], ...] = ()
    """Extra request headers the endpoint requires."""
    token_url: str | None = None
    """IMDSv2-style session token endpoint (PUT), when the metadata service wants one."""
    time_format: str | None = None
    """How the body states the reclaim time: 'iso', 'local+8' (UTC+8 wall clock), 'json-time', 'bool',
    'azure-events'."""
    source: str
    """Public page that documents the endpoint and the lead time."""
    as_of: str = "2026-12"
    """When the source was read."""

    def __post_init__(self) -> None:
        if self.lead_seconds is not None and self.lead_seconds <= 0:
            raise ValueError(f"{self.provider}: lead_seconds must be > 0")
        if self.provider != "metadata-url" and not self.source.startswith("https://"):
            raise ValueError(f"{self.provider}: every notice source needs a public https source URL")


PROVIDERS: dict[str, NoticeSource] = {s.provider: s for s in (
    NoticeSource(
        provider="alibaba",
        url="http://100.100.100.200/latest/meta-data/instance/spot/termination-time",
        lead_seconds=300,
        notice_when="200 with the UTC release time (e.g. 2015-01-05T18:02:00Z) once the instance is to be "
                    "released; 404 otherwise",
        time_format="iso",
        source="https://www.alibabacloud.com/help/en/ecs/user-guide/query-the-interruption-events-of-preemptible-instances"
               " (metadata item; 'the instance will be released 5 minutes later': "
               "https://www.alibabacloud.com/help/en/ecs/user-guide/what-is-a-spot-instance)",
    ),
    NoticeSource(
        provider="tencent",
        url="http://metadata.tencentyun.com/latest/meta-data/spot/termination-time",
        lead_seconds=None,
        notice_when="200 with the termination time in UTC+8 (e.g. 2018-08-18 12:05:33); 404 when the "
                    "instance is not a spot instance or not being terminated",
        time_format="local+8",
        source="https://www.tencentcloud.com/document/product/213/32487 (the page states no lead time; the "
               "deadline is the time in the body)",
    ),
    NoticeSource(
        provider="aws",
        url="http://169.254.169.254/latest/meta-data/spot/instance-action",
        lead_seconds=120,
        notice_when='200 with JSON {"action": "terminate"|"stop"|"hibernate", "time": "2017-09-18T08:22:00Z"} '
                    "two minutes before the action; 404 otherwise",
        token_url="http://169.254.169.254/latest/api/token",
        time_format="json-time",
        source="https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html",
    ),
    NoticeSource(
        provider="gcp",
        url="http://metadata.google.internal/computeMetadata/v1/instance/preempted",
        lead_seconds=30,
        notice_when="TRUE once the VM is being preempted (FALSE otherwise); the VM gets about 30 s before it "
                    "is stopped",
        headers=(("Metadata-Flavor", "Google"),),
        time_format="bool",
        source="https://cloud.google.com/compute/docs/instances/spot",
    ),
    NoticeSource(
        provider="azure",
        url="http://169.254.169.254/metadata/scheduledevents?api-version=2020-07-01",
        lead_seconds=30,
        notice_when='200 with JSON {"Events": [...]}; an event with EventType "Preempt" is the notice (at '
                    "least 30 s ahead, NotBefore gives the time)",
        headers=(("Metadata", "true"),),
        time_format="azure-events",
        source="https://learn.microsoft.com/en-us/azure/virtual-machines/linux/scheduled-events",
    ),
)}


@dataclass(frozen=True, kw_only=True)
class Notice:
    """A preemption notice that was seen."""

    source: str
    """Where it came from ('alibaba', 'metadata-url', 'notice-file', 'sigterm', ...)."""
    reason: str
    """Human-readable text (the body of the notice, trimmed)."""
    deadline_unix: float
    """When the instance goes away (seconds since the epoch); the stop must finish before it."""


def _parse_time(text: str, fmt: str | None) -> float | None:
    text = text.strip()
    if not text:
        return None
    if fmt == "local+8":
        try:
            dt = datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone(timedelta(hours=8)))
            return dt.timestamp()
        except ValueError:
            return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        pass
    try:
        return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        pass
    try:  # RFC 1123, as Azure's NotBefore
        from email.utils import parsedate_to_datetime

        return parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


def parse_notice_body(body: str, *, fmt: str | None, now: float, lead_seconds: float) -> float | None:
    """The reclaim time stated by a 200 response, ``now + lead_seconds`` when the body says "yes" without a
    time, or None when the body means "no notice" (GCP's FALSE, Azure without a Preempt event, empty)."""
    body = body.strip()
    if not body:
        return None
    if fmt == "bool" or body.upper() in ("TRUE", "FALSE"):
        return now + lead_seconds if body.upper() == "TRUE" else None
    if fmt in ("json-time", "azure-events") or body.startswith("{"):
        try:
            obj = json.loads(body)
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            if "Events" in obj:
                pre = [e for e in obj.get("Events") or [] if isinstance(e, dict) and e.get("EventType") == "Preempt"]
                if not pre:
                    return None
                t = _parse_time(str(pre[0].get("NotBefore") or ""), None)
                return t if t is not None else now + lead_seconds
            t = _parse_time(str(obj.get("time") or ""), None)
            return t if t is not None else now + lead_seconds
    t = _parse_time(body, fmt)
    return t if t is not None else now + lead_seconds


class MetadataPoller:
    """Polls one metadata URL; 404 (or any connection error) means no notice. ``lead_seconds`` is used when
    neither the body nor the source states the time left."""

    def __init__(self, src: NoticeSource, *, lead_seconds: float, timeout_s: float = 1.0) -> None:
        self.src = src
        self.lead_seconds = src.lead_seconds or lead_seconds
        self.timeout_s = timeout_s
        self._token: str | None = None
        self._token_until = 0.0
        self._inflight = None
        self.reachable: bool | None = None
        """None before the first poll; False when the last finished poll got no HTTP answer at all (no route,
        refused, timed out): no notice can come from this source then, which the runner says once."""
        self.error: str = ""

    def _fetch(self, req: urllib.request.Request) -> str | None:
        """The body of a 200 answer, read under a total deadline of ``3 x timeout_s`` (a server that trickles a
        byte at a time, each within the per-read timeout, cannot hold watch: the read runs in a daemon thread and
        is abandoned at the deadline; no new read starts while an abandoned one still runs). A finished read also
        says whether the service answered at all (:attr:`reachable`)."""
        import threading

        if self._inflight is not None and self._inflight.is_alive():
            return None
        box: list[str | None] = [None]
        state: dict[str, object] = {}

        def get() -> None:
            try:
                with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                    state["reachable"] = True
                    if r.status == 200:
                        box[0] = r.read(65536).decode("utf-8", "replace")
            except urllib.error.HTTPError:  # an answer (404: no notice): the service is there
                state["reachable"] = True
            except (OSError, urllib.error.URLError, ValueError, http.client.HTTPException) as e:
                state["reachable"] = False
                state["error"] = str(getattr(e, "reason", None) or e)[:200]

        t = threading.Thread(target=get, name="trainfit-watch-metadata", daemon=True)
        self._inflight = t
        t.start()
        t.join(3 * self.timeout_s)
        if t.is_alive():
            return None
        if "reachable" in state:
            self.reachable = bool(state["reachable"])
            self.error = str(state.get("error", ""))
        return box[0]

    def _aws_token(self) -> str | None:
        if self.src.token_url is None:
            return None
        if self._token and time.time() < self._token_until:
            return self._token
        req = urllib.request.Request(self.src.token_url, method="PUT",
                                     headers={"X-aws-ec2-metadata-token-ttl-seconds": "21600"})
        token = self._fetch(req)  # the same total deadline; None: IMDSv1 still works where IMDSv2 is optional
        self._token = token.strip()[:4096] if token else None
        if self._token:
            self._token_until = time.time() + 21000
        return self._token

    def poll(self, now: float | None = None) -> Notice | None:
        now = time.time() if now is None else now
        headers = dict(self.src.headers)
        token = self._aws_token()
        if token:
            headers["X-aws-ec2-metadata-token"] = token
        req = urllib.request.Request(self.src.url, headers=headers)
        body = self._fetch(req)
        if body is None:
            return None
        deadline = parse_notice_body(body, fmt=self.src.time_format, now=now, lead_seconds=self.lead_seconds)
        if deadline is None:
            return None
        return Notice(source=self.src.provider, reason=body.strip()[:200], deadline_unix=deadline)


class FilePoller:
    """``--notice-file PATH``: the file appearing is the notice; its content may state the reclaim time
    (ISO 8601, or JSON with "time"); otherwise the deadline is ``lead_seconds`` from when it was seen."""

    def __init__(self, path: str, *, lead_seconds: float) -> None:
        self.path = path
        self.lead_seconds = lead_seconds

    def poll(self, now: float | None = None) -> Notice | None:
        now = time.time() if now is None else now
        if not os.path.lexists(self.path):
            return None
        body = ""
        try:  # O_NONBLOCK + fstat: a FIFO (or a device) there is a notice by its appearance, never read (no hang)
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
            try:
                if stat.S_ISREG(os.fstat(fd).st_mode):
                    body = os.read(fd, 65536).decode("utf-8", "replace")
            finally:
                os.close(fd)
        except OSError:
            body = ""
        deadline = parse_notice_body(body, fmt=None, now=now, lead_seconds=self.lead_seconds) if body.strip() \
            else now + self.lead_seconds
        if deadline is None:  # e.g. the file says FALSE
            return None
        return Notice(source="notice-file", reason=body.strip()[:200] or self.path, deadline_unix=deadline)


def custom_source(url: str, *, lead_seconds: float | None = None) -> NoticeSource:
    """A ``--metadata-url`` source: any 200 with a non-empty body that is not FALSE is a notice."""
    if not url.startswith(("http://", "https://")):
        raise WatchError(_("--metadata-url must be an http(s) URL; got {url!r}").format(url=url))
    return NoticeSource(provider="metadata-url", url=url, lead_seconds=lead_seconds,
                        notice_when="200 with a non-empty body", time_format=None,
                        source="user-supplied --metadata-url")


def provider_source(name: str) -> NoticeSource:
    try:
        return PROVIDERS[name]
    except KeyError:
        raise WatchError(_("unknown --provider {name!r}").format(name=name),
                         fix=_("use one of: {choices}, or none").format(choices=", ".join(sorted(PROVIDERS)))) from None


__all__ = ["PROVIDERS", "NoticeSource", "Notice", "MetadataPoller", "FilePoller", "parse_notice_body",
           "custom_source", "provider_source"]
