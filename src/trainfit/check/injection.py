"""The ``shell-injection`` check: values that a shell, a job spec or a scheduler will treat as code.

:func:`find_injection` looks at the facts read from a job file (:class:`~trainfit.check.facts.JobFacts`) and
reports

* **error**: a shell metacharacter (``;``, ``|``, ``&``, ``$``, a backquote, ``<``, ``>``, parentheses, braces,
  quotes, a backslash, white space) or a line break / control character inside a field that is an identifier
  and nothing else: instance type (``EcsSpec``, ``--worker-spec``, ``instance_type``), container image, region,
  resource (quota) id, VPC / vSwitch / security group ids, GPU type, mount paths, environment variable names.
  A line break in such a value is how ``--region $'cn-hangzhou\\ntouch /tmp/pwned'`` became a command in a
  launch script; trainfit's own ``render`` refuses such values (:mod:`trainfit.inputs`), so they only come from
  files written elsewhere.
* a **command substitution** (``$(...)`` or backquotes, outside single quotes) inside the arguments of a
  training command (``torchrun``, ``swift sft``, ``llamafactory-cli train``...): it runs when the job starts,
  on every node. An **error** when the substituted command fetches or runs code (``curl``, ``wget``, ``eval``,
  ``bash``/``sh``, ``python -c``, ``base64``, ``nc``, ``rm``), a **warning** otherwise (``$(date +%s)`` is
  common and harmless). Arithmetic ``$((...))`` and variables (``$RANK``) are not substitutions.

Each finding is a dict ``{"rule": "shell-injection", "severity", "message", "fix"}`` (the fields of
:class:`~trainfit.check.rules.Violation`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Iterable

from trainfit.i18n import N_, _, translate
from trainfit.check.shell import training_args
from trainfit.check.rules import Violation
from trainfit.json_types import JSON

if TYPE_CHECKING:
    from trainfit.check.facts import JobFacts
    from trainfit.check.rules import CheckOptions

RULE = "shell-injection"
#: Characters a shell (or a YAML/JSON consumer that hands the value to a shell) treats specially.
_META = set(";|&$`<>(){}[]\\'\"*?!~#")
#: Line breaks of shells and of YAML 1.1 (NEL, LS, PS), and other control characters.
_BREAKS = {"\n": N_("a line break"), "\r": N_("a carriage return"), "\x85": N_("a NEL line break"),
           "\u2028": N_("a Unicode line separator"), "\u2029": N_("a Unicode paragraph separator")}
_DANGEROUS = re.compile(r"\b(?:curl|wget|eval|bash|sh|zsh|python[0-9.]*\s+-c|perl|base64|nc|ncat|rm|chmod|"
                        r"ssh|scp)\b")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,255}")
_FIX_IDENT = N_("write the plain identifier (letters, digits, '.', '_', '-', '/' and ':' where the field allows); "
                "identifiers never carry spaces, quotes, '$', ';', '|', '&', backquotes or line breaks")


def _describe(value: str, *, spaces: bool = False) -> str | None:
    """What makes ``value`` unsafe, or None (``spaces``: white space is part of the name, e.g. GPU names)."""
    for ch, name in _BREAKS.items():
        if ch in value:
            return translate(name)
    for ch in value:
        if ord(ch) < 32 or ord(ch) == 127:
            return _("a control character (U+{code:04X})").format(code=ord(ch))
    bad = sorted({ch for ch in value if ch in _META})
    if bad:
        return _("the shell character(s) {chars}").format(chars=" ".join(repr(c) for c in bad[:6]))
    if not spaces and any(ch.isspace() for ch in value):
        return _("white space")
    return None


def _shown(value: str, n: int = 60) -> str:
    s = repr(value)
    return s if len(s) <= n else s[: n - 3] + "..."


def _finding(severity: str, message: str, fix: str) -> dict[str, str]:
    return {"rule": RULE, "severity": severity, "message": message, "fix": fix}


def _ident_fields(facts: JobFacts) -> Iterable[tuple[str, JSON, str | None]]:
    """(where, value, pattern kind or None) of every identifier field the facts carry."""
    for v in facts.instance_types or ():
        yield _("instance type"), v, "instance_type"
    for v in facts.images or ():
        yield _("image"), v, "image"
    for where, v in (facts.regions or {}).items():
        yield _("region ({where})").format(where=where), v, "region"
    if facts.resource_id:
        yield _("resource id"), facts.resource_id, "resource_id"
    if isinstance(facts.vpc, dict):
        for k, v in facts.vpc.items():
            yield f"UserVpc.{k}", v, None
    if facts.gpu:
        yield _("GPU type"), facts.gpu, "gpu"
    for v in facts.mounts or ():
        yield _("mount path"), v, None


def find_injection(facts: JobFacts) -> list[dict[str, str]]:
    """Every ``shell-injection`` finding of ``facts`` (see the module docstring); empty when clean."""
    out: list[dict[str, str]] = []
    for where, value, kind in _ident_fields(facts):
        if not isinstance(value, str):
            if isinstance(value, (list, dict)):
                out.append(_finding("error", _("{where} is a {type}, not a plain value").format(
                    where=where, type=type(value).__name__), translate(_FIX_IDENT)))
            continue
        # only what a shell would act on is reported; an odd but harmless spelling is the catalog rules' business
        why = _describe(value, spaces=kind == "gpu")
        if why:
            out.append(_finding("error", _("{where} {value} contains {why}; a script or scheduler that uses this value "
                                           "would run what follows as a command").format(
                where=where, value=_shown(value), why=why), translate(_FIX_IDENT)))
    for name in (facts.envs or {}):
        if not _ENV_NAME.fullmatch(str(name)):
            out.append(_finding("error", _("environment variable name {name} is not a shell identifier").format(
                name=_shown(str(name))), _("use letters, digits and '_' (not starting with a digit)")))
    out += _substitutions(facts)
    out += _broken_headers(facts)
    return out


def _broken_headers(facts: JobFacts) -> list[dict[str, str]]:
    """A line that is not a comment inside the comment header ``trainfit render`` writes (between its first line
    and its ``# trainfit-plan {...}`` line): a value with a line break ended a comment there (trainfit < 0.2 wrote
    ``--region $'cn-hangzhou\\ntouch /tmp/pwned'`` that way), and the shell runs that line."""
    out: list[dict[str, str]] = []
    for where, script in facts.scripts or ():
        lines = script.text.splitlines()
        start = next((i for i, ln in enumerate(lines[:50]) if ln.startswith("#")
                      and "generated by `trainfit render`" in ln), None)
        if start is None:
            continue
        end = next((i for i in range(start, min(len(lines), start + 50)) if lines[i].startswith("# trainfit-plan ")),
                   None)
        if end is None:
            continue
        for i in range(start + 1, end):
            if lines[i].strip() and not lines[i].lstrip().startswith("#"):
                out.append(_finding("error", _("{where}, line {line}: {text} is not a comment but sits inside the "
                                               "header trainfit wrote: a value with a line break ended a comment, and "
                                               "the shell would run this line").format(
                    where=where, line=i + 1, text=_shown(lines[i])),
                    _("delete the line (and render the job again with this trainfit, which refuses such values)")))
    return out


def _substitutions(facts: JobFacts) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    seen: set[str] = set()
    for where, script in facts.scripts or ():
        for cmd in script.commands:
            if training_args(cmd) is None:
                continue
            for sub in command_substitutions(cmd.text):
                if sub in seen:
                    continue
                seen.add(sub)
                dangerous = _DANGEROUS.search(sub) is not None
                if dangerous:
                    msg = _("{where}, line {line}: the training command runs {sub} when the job starts (a command "
                            "substitution in its arguments, and it fetches or runs code)")
                else:
                    msg = _("{where}, line {line}: the training command runs {sub} when the job starts (a command "
                            "substitution in its arguments)")
                out.append(_finding(
                    "error" if dangerous else "warning", msg.format(where=where, line=cmd.line, sub=_shown(sub)),
                    _("write the value itself, single-quoted (e.g. --output_dir '/mnt/out'); compute values in a "
                      "reviewed line before the command if you must")))
    return out


def command_substitutions(text: str, limit: int = 20) -> list[str]:
    """``$(...)`` and backquoted substitutions of a shell text that a shell would run (outside single quotes and
    not backslash-escaped); ``$((...))`` arithmetic is not one. Linear in ``len(text)``."""
    found: list[str] = []
    i, n = 0, len(text)
    single = double = False
    while i < n and len(found) < limit:
        ch = text[i]
        if single:
            if ch == "'":
                single = False
            i += 1
            continue
        if ch == "\\":
            i += 2
            continue
        if ch == "'" and not double:
            single = True
        elif ch == '"':
            double = not double
        elif ch == "`":
            j = text.find("`", i + 1)
            j = n if j < 0 else j
            found.append(text[i: j + 1][:200])
            i = j + 1
            continue
        elif ch == "$" and text.startswith("$(", i) and not text.startswith("$((", i):
            depth, j = 0, i + 1
            while j < n:
                if text[j] == "(":
                    depth += 1
                elif text[j] == ")":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            found.append(text[i: j + 1][:200])
            i = j + 1
            continue
        i += 1
    return found


def rule_shell_injection(facts: JobFacts, options: CheckOptions | None = None) -> list[Violation]:
    """:func:`find_injection` as check rule objects (``Violation``), for the rule list of :mod:`trainfit.check.rules`."""
    return [Violation(**f) for f in find_injection(facts)]
