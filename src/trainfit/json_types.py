"""The JSON value types: what ``--json`` prints, what the web API answers and what a request body holds; and
the YAML one (a parsed overlay, rules file or calibration)."""

from __future__ import annotations

import datetime
from typing import Mapping, Sequence, Union

#: A JSON value as :func:`json.loads` gives it.
JSON = Union[None, bool, int, float, str, list["JSON"], dict[str, "JSON"]]
#: A value that becomes JSON once its tuples are lists (a ``to_dict()`` result): arrays may be any sequence and
#: objects any mapping.
JSONLike = Union[None, bool, int, float, str, Sequence["JSONLike"], Mapping[str, "JSONLike"]]
#: A JSON scalar.
JSONScalar = Union[None, bool, int, float, str]
#: A JSON object (a parsed job file, plan, catalog cache, API body...).
JSONObject = dict[str, JSON]
#: A value ``yaml.safe_load`` gives: JSON's, plus dates and timestamps (``2024-05-01``).
YAMLValue = Union[None, bool, int, float, str, datetime.date, datetime.datetime, list["YAMLValue"],
                  dict[str, "YAMLValue"]]
#: p10/p50/p90 of a figure (:meth:`trainfit.estimate.uncertainty.Interval.scale`).
Quantiles = dict[str, float]
