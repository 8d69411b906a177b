"""One conversation from one dataset row, in the formats ms-swift and LLaMA-Factory read.

A row becomes a list of ``(role, content)`` turns with roles ``system`` / ``user`` / ``assistant`` / ``tool``:

* **messages** (ms-swift's standard format, OpenAI style): ``{"messages": [{"role": ..., "content": ...}]}``;
  https://swift.readthedocs.io/en/latest/Customization/Custom-dataset.html
* **sharegpt** (LLaMA-Factory): ``{"conversations": [{"from": "human"|"gpt"|"system"|"observation"|
  "function_call", "value": ...}], "system": ...}``;
  https://github.com/hiyouga/LLaMA-Factory/blob/main/data/README.md
* **alpaca** (both): ``{"instruction", "input", "output", "system", "history": [[query, answer], ...]}`` and
  ms-swift's ``{"query", "response", "system", "history"}``.

Column names can be remapped (``--columns messages=dialog,output=answer``), as LLaMA-Factory's
``dataset_info.json`` ``columns`` and ms-swift's ``--columns`` do.
"""

from __future__ import annotations


from trainfit.i18n import _
from trainfit.json_types import JSON

FORMATS = ("auto", "messages", "sharegpt", "alpaca")
#: Canonical column names a --columns mapping may rename.
COLUMNS = ("messages", "conversations", "instruction", "input", "output", "query", "response", "system", "history")
_SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "assistant": "assistant", "system": "system",
                   "observation": "tool", "function_call": "assistant", "tool": "tool", "function": "tool"}
_MESSAGE_ROLES = {"system", "user", "assistant", "tool"}

Turn = tuple[str, str]


class RowError(ValueError):
    """A row that is not a conversation in the expected format (reported with its line number)."""


def detect(row: JSON, columns: dict[str, str]) -> str:
    """The format of one row, from the keys it has."""
    if not isinstance(row, dict):
        raise RowError(_("a row must be a JSON object, got {type}").format(type=type(row).__name__))
    col = lambda k: columns.get(k, k)  # noqa: E731
    if col("messages") in row:
        return "messages"
    if col("conversations") in row:
        return "sharegpt"
    if any(col(k) in row for k in ("instruction", "query", "output", "response")):
        return "alpaca"
    raise RowError(_("no known columns (messages, conversations, instruction/input/output or query/response); "
                     "keys: {keys}").format(keys=", ".join(sorted(map(str, row))[:8])))


def _text(v: JSON, what: str) -> str:
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return str(v)
    if isinstance(v, list):  # OpenAI content parts: [{"type": "text", "text": ...}]
        parts = []
        for p in v:
            if isinstance(p, dict) and isinstance(p.get("text"), str):
                parts.append(p["text"])
            else:
                raise RowError(_("{what}: only text content parts are counted").format(what=what))
        return "".join(parts)
    raise RowError(_("{what} must be text, got {type}").format(what=what, type=type(v).__name__))


def to_turns(row: JSON, fmt: str, columns: dict[str, str]) -> list[Turn]:
    """The conversation of one row as ``(role, content)`` turns, ending with an assistant turn."""
    if fmt == "auto":
        fmt = detect(row, columns)
    elif not isinstance(row, dict):
        raise RowError(_("a row must be a JSON object, got {type}").format(type=type(row).__name__))
    col = lambda k: columns.get(k, k)  # noqa: E731
    turns: list[Turn] = []
    if fmt == "messages":
        msgs = row.get(col("messages"))
        if not isinstance(msgs, list) or not msgs:
            raise RowError(_("'{column}' must be a non-empty list").format(column=col("messages")))
        if row.get(col("system")):
            turns.append(("system", _text(row[col("system")], "system")))
        for i, m in enumerate(msgs):
            if not isinstance(m, dict):
                raise RowError(_("message {i} is not an object").format(i=i))
            role = m.get("role")
            if role not in _MESSAGE_ROLES:
                raise RowError(_("message {i} has role {role!r}; expected one of {roles}").format(
                    i=i, role=role, roles=sorted(_MESSAGE_ROLES)))
            turns.append((role, _text(m.get("content"), _("message {i} content").format(i=i))))
    elif fmt == "sharegpt":
        conv = row.get(col("conversations"))
        if not isinstance(conv, list) or not conv:
            raise RowError(_("'{column}' must be a non-empty list").format(column=col("conversations")))
        if row.get(col("system")):
            turns.append(("system", _text(row[col("system")], "system")))
        for i, m in enumerate(conv):
            if not isinstance(m, dict):
                raise RowError(_("turn {i} is not an object").format(i=i))
            who = m.get("from", m.get("role"))
            role = _SHAREGPT_ROLES.get(who) if isinstance(who, str) else None
            if role is None:
                raise RowError(_("turn {i} is from {who!r}; expected human, gpt, system, observation or "
                                 "function_call").format(i=i, who=who))
            turns.append((role, _text(m.get("value", m.get("content")), _("turn {i} value").format(i=i))))
    elif fmt == "alpaca":
        if row.get(col("system")):
            turns.append(("system", _text(row[col("system")], "system")))
        hist = row.get(col("history")) or []
        if not isinstance(hist, list):
            raise RowError(_("'history' must be a list of [query, answer] pairs"))
        for i, pair in enumerate(hist):
            if not (isinstance(pair, (list, tuple)) and len(pair) == 2):
                raise RowError(_("history item {i} is not a [query, answer] pair").format(i=i))
            turns += [("user", _text(pair[0], "history query")), ("assistant", _text(pair[1], "history answer"))]
        if col("instruction") in row or col("input") in row:
            prompt = "\n".join(t for t in (_text(row.get(col("instruction")), "instruction"),
                                           _text(row.get(col("input")), "input")) if t)
        else:
            prompt = _text(row.get(col("query")), "query")
        answer = row.get(col("output"), row.get(col("response")))
        turns += [("user", prompt), ("assistant", _text(answer, "output"))]
    else:
        raise RowError(_("unknown format {fmt!r}").format(fmt=fmt))
    if not any(r == "assistant" for r, _content in turns):
        raise RowError(_("the conversation has no assistant turn (nothing to train on)"))
    while turns and turns[-1][0] != "assistant":  # trailing user/tool turns carry no loss and are not trained
        turns.pop()
    return turns


def parse_columns(spec: str | None) -> dict[str, str]:
    """``"messages=dialog,output=answer"`` -> ``{"messages": "dialog", "output": "answer"}``."""
    out: dict[str, str] = {}
    if not spec:
        return out
    for part in spec.split(","):
        key, sep, val = part.strip().partition("=")
        if not sep or not val.strip():
            raise ValueError(_("--columns: {part!r} is not KEY=COLUMN").format(part=part))
        key = key.strip()
        if key not in COLUMNS:
            raise ValueError(_("--columns: unknown key {key!r}; keys: {keys}").format(key=key, keys=", ".join(COLUMNS)))
        out[key] = val.strip()
    return out
