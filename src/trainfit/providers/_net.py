"""Network calls to cloud APIs under a total deadline, and the one place that tells a network failure
from an answer of the service.

* :func:`call_with_deadline` runs a blocking SDK call in a worker thread and waits at most ``timeout_s`` seconds
  of wall-clock time for all of it (DNS, connect, TLS, every read, retries). Socket timeouts alone bound each
  read, so a server that trickles one byte a second would never be cut off by them; the watchdog is what makes
  ``--timeout`` a total deadline. A call still running at the deadline is abandoned (the thread is a daemon and
  holds no trainfit state) and the caller gets a :class:`~trainfit.errors.NetworkError`.
* :func:`network_failure` says whether an exception means "the service was not reached or did not answer" (no
  HTTP status, no error code from the server): those are network errors, never quota or stock answers, whatever
  words the transport puts in its message ("Max retries exceeded" is not a quota).
"""

from __future__ import annotations

import threading
from typing import Callable, TypeVar

from trainfit.errors import NetworkError
from trainfit.i18n import _, translate

T = TypeVar("T")

#: Exception type names (of the exception or any exception it wraps) raised by transports, not by the service.
_TRANSPORT_TYPES = ("ConnectionError", "ConnectTimeout", "ReadTimeout", "Timeout", "TimeoutError", "MaxRetryError",
                    "NewConnectionError", "ProtocolError", "RemoteDisconnected", "ConnectionResetError",
                    "ConnectionRefusedError", "ConnectionAbortedError", "gaierror", "SSLError", "ChunkedEncodingError",
                    "ClientConnectorError", "ServerDisconnectedError", "ClientOSError", "IncompleteRead",
                    "BrokenPipeError", "socket.timeout", "herror")
_TRANSPORT_WORDS = ("max retries exceeded", "connection refused", "connection reset", "connection aborted",
                    "name or service not known", "nodename nor servname", "temporary failure in name resolution",
                    "failed to establish a new connection", "timed out", "remote end closed", "connection broken",
                    "network is unreachable", "no route to host", "ssl", "eof occurred")


def call_with_deadline(fn: Callable[[], T], *, timeout_s: float, what: str, fix: str | None = None) -> T:
    """``fn()`` if it finishes within ``timeout_s`` seconds in total, else :class:`NetworkError`.
    Exceptions of ``fn`` are raised as they are (the caller classifies them)."""
    box: dict[str, T | BaseException] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = e

    t = threading.Thread(target=run, name="trainfit-net", daemon=True)
    t.start()
    t.join(timeout_s)
    if t.is_alive():
        raise NetworkError(_("{what} timed out: no complete answer within {timeout_s:g} s (total deadline)").format(
            what=what, timeout_s=timeout_s),
            fix=translate(fix) if fix else _("check the network, proxy and endpoint, or retry with a larger --timeout"))
    if "error" in box:
        raise box["error"]
    return box["value"]


def _chain(e: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    seen: set[int] = set()
    todo: list[BaseException | None] = [e]
    while todo and len(out) < 20:
        x = todo.pop()
        if x is None or id(x) in seen:
            continue
        seen.add(id(x))
        out.append(x)
        todo += [getattr(x, "inner_exception", None), x.__cause__, x.__context__]
        reason = getattr(x, "reason", None)
        if isinstance(reason, BaseException):
            todo.append(reason)
        for a in getattr(x, "args", ()) or ():
            if isinstance(a, BaseException):
                todo.append(a)
    return out


def server_status(e: BaseException) -> int | None:
    """The HTTP status the service answered with, if it answered."""
    for x in _chain(e):
        for attr in ("status_code", "statusCode"):
            v = getattr(x, attr, None)
            if isinstance(v, int) and not isinstance(v, bool) and 100 <= v <= 599:
                return v
        data = getattr(x, "data", None)
        if isinstance(data, dict):
            v = data.get("statusCode")
            if isinstance(v, int) and not isinstance(v, bool) and 100 <= v <= 599:
                return v
    return None


def network_failure(e: BaseException) -> bool:
    """True when ``e`` means the service was not reached or did not answer (see the module docstring)."""
    if server_status(e) is not None:
        return False
    chain = _chain(e)
    for x in chain:
        name = type(x).__name__
        if name in _TRANSPORT_TYPES or isinstance(x, (ConnectionError, TimeoutError)):
            return True
    text = " ".join(str(x) for x in chain).lower()
    if any(w in text for w in _TRANSPORT_WORDS):
        return True
    # no status and no error code from the server: nothing was answered
    return not any(str(getattr(x, "code", "") or "").strip() for x in chain)


def short(e: BaseException, n: int = 300) -> str:
    s = " ".join(str(e).split())
    return s if len(s) <= n else s[: n - 3] + "..."
