"""JSON as a type: what ``json.loads`` returns and ``json.dumps`` writes, for the typed values' ``to_dict``."""

from __future__ import annotations

from typing import Dict, List, TypeAlias, Union

#: A JSON value (a real recursive union, not an alias of Any).
JSON: TypeAlias = Union[None, bool, int, float, str, List["JSON"], Dict[str, "JSON"]]
#: A JSON object.
JSONDict: TypeAlias = Dict[str, JSON]
#: p10/p50/p90 of a figure (:meth:`trainfit.estimate.uncertainty.Interval.scale`).
Quantiles: TypeAlias = Dict[str, float]

__all__ = ["JSON", "JSONDict", "Quantiles"]
