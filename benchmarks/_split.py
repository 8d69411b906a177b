"""The frozen test split shared by the accuracy benchmarks (speed_loso.py, fit_corpus.py, intervals.py).

A data source is FROZEN when ``sha256(key)``'s first byte is divisible by 4 (about a quarter of the sources):
the fit and the intervals never see its rows; they are predicted only to report how the model does on data it
was not tuned on. The key of a speed source is its name under ``sources:`` in ``benchmarks/data/throughput.yaml``;
the key of a fit report is :func:`report_source`. The rule depends on the name alone, so a source stays on its
side when rows are added, and a new source lands on a side nobody chose.
"""

from __future__ import annotations

import hashlib
import re

RULE = "sha256(source key).digest()[0] % 4 == 0"


def is_frozen(key: str) -> bool:
    """True when source ``key`` belongs to the frozen test split."""
    return hashlib.sha256(key.encode()).digest()[0] % 4 == 0


def report_source(report: dict) -> str:
    """The source key of a fit report (``benchmarks/data/fit_reports.yaml``): its ``source`` field when it has
    one, else its URL without scheme, fragment and query, with a GitHub ``blob/<ref>/`` or ``tree/<ref>/`` segment
    dropped (the same file at two commits is one source; each GitHub issue is its own source)."""
    if report.get("source"):
        return str(report["source"])
    url = str(report["url"]).split("#")[0].split("?")[0]
    url = re.sub(r"^https?://", "", url)
    return re.sub(r"/(blob|tree)/[^/]+/", "/", url)
