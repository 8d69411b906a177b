"""The types of parsed JSON and YAML values, defined once (issue 30: precise types instead of ``Any``).

Imports nothing from the project: every layer may use it.
"""

from __future__ import annotations

import datetime
from typing import Mapping, Sequence, TypeAlias, Union

#: A JSON scalar.
JSONScalar: TypeAlias = Union[str, int, float, bool, None]
#: Any value ``json.loads`` returns: a scalar, a list of values or an object of values.
JSONValue: TypeAlias = Union[JSONScalar, list["JSONValue"], dict[str, "JSONValue"]]
#: A JSON object (a parsed job file, plan, catalog cache, API body...).
JSONObject: TypeAlias = dict[str, JSONValue]
#: A value ``json.dumps`` writes (what a ``to_dict`` returns): containers read-only, so a ``dict[str, float]``
#: or a ``list[dict[str, str]]`` is one too.
JSONData: TypeAlias = Union[JSONScalar, Sequence["JSONData"], Mapping[str, "JSONData"]]
#: Any value ``yaml.safe_load`` returns: JSON's, plus dates and timestamps (``2024-05-01``).
YAMLValue: TypeAlias = Union[JSONScalar, datetime.date, datetime.datetime, list["YAMLValue"],
                             dict[str, "YAMLValue"]]
