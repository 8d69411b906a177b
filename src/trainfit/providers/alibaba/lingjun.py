"""Lingjun (灵骏) detection: a spec is Lingjun when the catalog says so (resource class ``pai-lingjun``), else by
its documented name pattern ``ml.gu<gen><letters>f.…`` (``ml.gu7xf.8xlarge-gu108``, ``ml.gu7ef.c96m1600.8-gu100``,
``ml.gu8xf…``; pai-facts 1.1)."""

from __future__ import annotations

import re

LINGJUN_RE = re.compile(r"^ml\.gu\d+[a-z]*f\.", re.IGNORECASE)


def is_lingjun_name(instance_type: str | None) -> bool:
    """True for Lingjun spec names by their pattern (no catalog look-up)."""
    return bool(instance_type) and bool(LINGJUN_RE.match(instance_type.strip()))


def is_lingjun(instance_type: str | None, instance: object = None) -> bool:
    """True when the catalog record says ``pai-lingjun``, or (without a record) the name has the Lingjun pattern."""
    if instance is not None:
        return getattr(instance, "resource_class", "") == "pai-lingjun"
    return is_lingjun_name(instance_type)
