"""A small reader of shell launch scripts: line continuations joined, heredoc bodies set aside, each
command split with ``shlex`` into words, ``VAR=value`` assignments and ``--flag value`` pairs collected.

It does not run anything and does not try to be a shell: it finds the commands that matter (torchrun,
``python -m torch.distributed.run/launch``, ``swift sft``, ``megatron sft``, ``llamafactory-cli train``,
``pai dlc job submit``) and the variables they read.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_ASSIGN = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


@dataclass
class Command:
    words: list[str]
    line: int
    text: str
    env: dict[str, str] = field(default_factory=dict)
    """``VAR=value`` prefixes of this command."""

    @property
    def name(self) -> str:
        return self.words[0] if self.words else ""

    def flags(self) -> dict[str, str]:
        """``--key value`` / ``--key=value`` pairs (later ones win); a flag without value maps to ``""``."""
        out: dict[str, str] = {}
        w = self.words
        i = 0
        while i < len(w):
            tok = w[i]
            if tok.startswith("--") and len(tok) > 2:
                if "=" in tok:
                    k, v = tok[2:].split("=", 1)
                    out[k] = v
                elif i + 1 < len(w) and not w[i + 1].startswith("--"):
                    out[tok[2:]] = w[i + 1]
                    i += 1
                else:
                    out[tok[2:]] = ""
            i += 1
        return out


@dataclass
class Script:
    commands: list[Command]
    assignments: dict[str, str]
    """Every ``VAR=value`` / ``export VAR=value`` / ``: "${VAR:=value}"`` seen, last wins."""
    heredocs: list[str]
    comments: list[str]
    text: str
    unparsed: list[int] = field(default_factory=list)
    """Line numbers shlex could not split (unbalanced quotes)."""


_SEPARATORS = re.compile(r"&&|\|\||;")
_VAR_HEAD = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):?=")


def _default_assignments(line: str) -> list[tuple[str, str]]:
    """``${VAR:=value}`` / ``${VAR=value}`` pairs of ``line``, in one linear pass (a regex with ``[^}]*`` is
    quadratic on a line of many ``${A=`` and no ``}``)."""
    out: list[tuple[str, str]] = []
    close = -1
    i = line.find("${")
    while i >= 0:
        m = _VAR_HEAD.match(line, i + 2)
        if m:
            if close < m.end():
                close = line.find("}", m.end())
                if close < 0:
                    break
            out.append((m.group(1), line[m.end():close]))
        i = line.find("${", i + 2)
    return out


def _refuse_long_lines(raw: list[str]) -> None:
    """Raise :class:`~trainfit.errors.CheckInputError` when a line is over :data:`trainfit.inputs.MAX_LINE_CHARS`."""
    from trainfit.inputs import MAX_LINE_CHARS

    longest = max((len(ln) for ln in raw), default=0)
    if longest > MAX_LINE_CHARS:
        from trainfit.errors import CheckInputError

        n = next(i for i, ln in enumerate(raw, 1) if len(ln) == longest)
        raise CheckInputError(f"line {n} of the script is {longest:,} characters long, over the "
                              f"{MAX_LINE_CHARS:,}-character limit for a line of a job script",
                              fix="pass the job script itself (long data belongs in files the job reads)")


def _logical_lines(raw: list[str], heredocs: list[str], comments: list[str]) -> list[tuple[int, str]]:
    """Join ``\\`` continuations into ``(first line number, text)`` pairs; heredoc bodies go to ``heredocs`` and
    whole-line comments (outside a continuation) to ``comments``. One pass over ``raw``."""
    logical: list[tuple[int, str]] = []
    i = 0
    buf: list[str] = []
    start = 0
    while i < len(raw):
        line = raw[i]
        stripped = line.strip()
        if not buf and stripped.startswith("#"):
            comments.append(stripped.lstrip("#").strip())
            i += 1
            continue
        if not buf:
            start = i + 1
        m = _HEREDOC.search(line)
        if m:
            delim = m.group(2)
            body: list[str] = []
            i += 1
            while i < len(raw) and raw[i].strip() != delim:
                body.append(raw[i])
                i += 1
            heredocs.append("\n".join(body))
            line = line[: m.start()]
        if line.rstrip().endswith("\\"):
            buf.append(line.rstrip()[:-1] + " ")
            i += 1
            continue
        buf.append(line)
        logical.append((start, "".join(buf)))
        buf = []
        i += 1
    if buf:
        logical.append((start, "".join(buf)))
    return logical


def _split_assignments(words: list[str]) -> tuple[list[str], dict[str, str]]:
    """Strip leading ``VAR=value`` prefixes (and a whole ``export A=1 B=2``) off ``words``: the rest of the
    words and the variables set."""
    env: dict[str, str] = {}
    while words:
        m = _ASSIGN.match(words[0]) if not words[0].startswith("-") else None
        if m and words[0] != "export":
            env[m.group(1)] = m.group(2)
            words = words[1:]
        elif words[0] == "export" and len(words) > 1:
            for w in words[1:]:
                mm = _ASSIGN.match(w)
                if mm:
                    env[mm.group(1)] = mm.group(2)
            words = []
        else:
            break
    return words, env


def _parse_line(lineno: int, line: str, commands: list[Command], assignments: dict[str, str],
                unparsed: list[int]) -> None:
    """Split one logical line at ``&&``, ``||`` and ``;`` and add its commands, assignments and, when ``shlex``
    cannot split a part, its line number to ``unparsed``."""
    for name, value in _default_assignments(line):
        assignments.setdefault(name, value)
    for part in _SEPARATORS.split(line):
        part = part.strip()
        if not part:
            continue
        try:
            words = shlex.split(part, comments=True, posix=True)
        except ValueError:
            unparsed.append(lineno)
            continue
        if not words:
            continue
        words, env = _split_assignments(words)
        assignments.update(env)
        words = unwrap_watch(words)
        if words:
            commands.append(Command(words=words, line=lineno, text=part, env=env))


def parse_script(text: str) -> Script:
    """Parse ``text``; every step is linear in its length, and a line longer than
    :data:`trainfit.inputs.MAX_LINE_CHARS` is refused (:class:`~trainfit.errors.CheckInputError`)."""
    raw = text.splitlines()
    _refuse_long_lines(raw)
    heredocs: list[str] = []
    comments: list[str] = []
    logical = _logical_lines(raw, heredocs, comments)
    commands: list[Command] = []
    assignments: dict[str, str] = {}
    unparsed: list[int] = []
    for lineno, line in logical:
        _parse_line(lineno, line, commands, assignments, unparsed)
    return Script(commands=commands, assignments=assignments, heredocs=heredocs, comments=comments, text=text,
                  unparsed=unparsed)


def unwrap_watch(words: list[str]) -> list[str]:
    """The training command inside ``trainfit watch [options] -- CMD ...`` (and the ``$WATCH`` prefix that rendered
    scripts put in front of it), so the rules read the real launcher."""
    while words and words[0] in ("$WATCH", "${WATCH}", "${WATCH:-}"):
        words = words[1:]
    if len(words) >= 2 and words[0].endswith("trainfit") and words[1] == "watch" and "--" in words:
        words = words[words.index("--") + 1:]
    return words


def is_torchrun(cmd: Command) -> bool:
    w = cmd.words
    if not w:
        return False
    if w[0].endswith("torchrun"):
        return True
    return (len(w) >= 3 and re.search(r"python[0-9.]*$", w[0]) is not None and w[1] == "-m"
            and w[2] in ("torch.distributed.run", "torch.distributed.launch"))


def training_args(cmd: Command) -> tuple[str, dict[str, str]] | None:
    """(engine, flags) of a training command: ``swift``, ``megatron``, ``llamafactory`` or ``script``."""
    w = cmd.words
    if not w:
        return None
    if w[0] == "swift" and len(w) > 1 and w[1] in ("sft", "pt", "rlhf"):
        return "swift", cmd.flags()
    if w[0] == "megatron" and len(w) > 1 and w[1] in ("sft", "pt", "rlhf"):
        return "megatron", cmd.flags()
    if w[0] in ("llamafactory-cli", "lmf") and len(w) > 1 and w[1] == "train":
        return "llamafactory", cmd.flags()
    if is_torchrun(cmd):
        if "swift.cli._megatron.sft" in w or "swift.cli._megatron.pt" in w:
            return "megatron", cmd.flags()
        if any(t.startswith("swift.cli.") for t in w):
            return "swift", cmd.flags()
        return "script", cmd.flags()
    return None
