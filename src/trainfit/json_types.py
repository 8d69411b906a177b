"""The JSON value types: what ``--json`` prints, what the web API answers and what a request body holds."""

from __future__ import annotations

from typing import Mapping, Sequence, Union

#: A JSON value as :func:`json.loads` gives it.
JSON = Union[None, bool, int, float, str, list["JSON"], dict[str, "JSON"]]
#: A value that becomes JSON once its tuples are lists (a ``to_dict()`` result): arrays may be any sequence and
#: objects any mapping.
JSONLike = Union[None, bool, int, float, str, Sequence["JSONLike"], Mapping[str, "JSONLike"]]
#: A JSON object.
JSONDict = dict[str, JSON]
#: p10/p50/p90 of a figure (:meth:`trainfit.estimate.uncertainty.Interval.scale`).
Quantiles = dict[str, float]
