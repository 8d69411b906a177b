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
from trainfit.inputs import MAX_LINE_CHARS
from trainfit.errors import CheckInputError
from trainfit.i18n import _

_VAR_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)[^}]{0,200}\}|\$([A-Za-z_][A-Za-z0-9_]*)")
#: Longest launcher value after the script's variables are written out.
MAX_EXPANDED = 4096
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
    assignment_lines: dict[str, int] = field(default_factory=dict)
    """Line of the last assignment of each variable."""

    def expand(self, value: str, rounds: int = 8) -> str:
        """``value`` with the script's own variables written out (``$N`` where ``N=$WORLD_SIZE`` or
        ``N=$(echo $WORLD_SIZE)`` reads ``$WORLD_SIZE``): a launcher setting cannot hide which variable it reads
        behind another one. Variables the script does not set stay as they are; bounded in rounds and length."""
        return self._expand(value, rounds, frozenset())[:MAX_EXPANDED]

    def _expand(self, value: str, rounds: int, seen: frozenset) -> str:
        if "$" not in value or not self.assignments or rounds <= 0 or len(value) > MAX_EXPANDED:
            return value

        def one(m: "re.Match[str]") -> str:
            name = m.group(1) or m.group(2)
            v = self.assignments.get(name)
            if v is None or name in seen:
                return m.group(0)
            return f"{m.group(0)}({self._expand(v, rounds - 1, seen | {name})})"

        return _VAR_REF.sub(one, value)


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
    longest = max((len(ln) for ln in raw), default=0)
    if longest > MAX_LINE_CHARS:
        n = next(i for i, ln in enumerate(raw, 1) if len(ln) == longest)
        raise CheckInputError(_("line {n} of the script is {longest:,} characters long, over the {limit:,}-character "
                                "limit for a line of a job script").format(n=n, longest=longest, limit=MAX_LINE_CHARS),
                              fix=_("pass the job script itself (long data belongs in files the job reads)"))


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
        m = _heredoc(line)
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
                unparsed: list[int], depth: int = 0, lines: dict[str, int] | None = None) -> None:
    """Split one logical line at unquoted ``&&``, ``||``, ``|``, ``;`` and ``&`` and add its commands (prefix
    commands such as ``exec``, ``env X=1``, ``nohup``, ``time`` taken off, ``bash -c '...'`` read as a script),
    assignments and, when ``shlex`` cannot split a part, its line number to ``unparsed``."""
    for name, value in _default_assignments(line):
        assignments.setdefault(name, value)
    for part in split_commands(line):
        part = part.strip()
        if not part:
            continue
        try:
            words = [w.replace(_SUBST_SPACE, " ") for w in shlex.split(_protect_substitutions(part), comments=True,
                                                                        posix=True)]
        except ValueError:
            unparsed.append(lineno)
            continue
        words = _drop_redirections(words)
        if not words:
            continue
        words, env = _split_assignments(words)
        words, more_env, inner = strip_wrappers(words)
        env.update(more_env)
        assignments.update(env)
        if lines is not None:
            lines.update(dict.fromkeys(env, lineno))
        if inner is not None and depth < _MAX_NESTING:  # bash -c '...': the commands of the string
            for ln in inner.splitlines() or [inner]:
                _parse_line(lineno, ln, commands, assignments, unparsed, depth + 1, lines)
            continue
        words = unwrap_watch(words)
        if words:
            commands.append(Command(words=words, line=lineno, text=part, env=env))


_MAX_NESTING = 3
#: Shell keywords and grouping that may stand before a command (``if torchrun ...; then``, ``( torchrun ... )``).
_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "(", "((", "coproc"})
#: Prefix commands that run the rest of their words as a command: name -> options that take a value.
_WRAPPERS: dict[str, frozenset[str]] = {
    "exec": frozenset({"-a"}), "nohup": frozenset(), "time": frozenset({"-f", "-o", "--format", "--output"}),
    "command": frozenset(), "builtin": frozenset(), "setsid": frozenset(), "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "-p", "--class", "--classdata"}), "stdbuf": frozenset({"-i", "-o", "-e"}),
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "--user", "--group"}),
    "taskset": frozenset(), "numactl": frozenset(), "chrt": frozenset(), "timeout": frozenset({"-s", "-k",
                                                                                              "--signal", "--kill-after"}),
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}), "xargs": frozenset(),
    "srun": frozenset(), "mpirun": frozenset(), "caffeinate": frozenset(), "unbuffer": frozenset(),
}
_SHELLS = re.compile(r"(?:^|/)(?:ba|z|da|k)?sh$")


def strip_wrappers(words: list[str]) -> tuple[list[str], dict[str, str], str | None]:
    """``words`` without the prefix commands a shell runs the real command through: ``exec``, ``env [-i] X=1``,
    ``nohup``, ``time [-p]``, ``nice -n 5``, ``timeout 1h``, ``setsid``, ``sudo -u u``, shell keywords and
    grouping; with the ``VAR=value`` the prefixes set, and the script string of ``bash -c '...'`` (None when
    there is none)."""
    env: dict[str, str] = {}
    for _ in range(16):
        if not words:
            break
        w0 = words[0]
        base = w0.rsplit("/", 1)[-1]
        if w0 in _KEYWORDS:
            words = words[1:]
        elif w0.startswith("(") and len(w0) > 1 and not w0.startswith("(("):
            words = [w0[1:], *words[1:]]
        elif base in _WRAPPERS:
            takes = _WRAPPERS[base]
            rest = words[1:]
            while rest and rest[0].startswith("-") and rest[0] != "--":
                opt = rest[0]
                rest = rest[2:] if opt in takes and len(rest) > 1 else rest[1:]
                if base == "timeout":
                    continue
            if rest and rest[0] == "--":
                rest = rest[1:]
            if base == "env":
                while rest:
                    m = _ASSIGN.match(rest[0])
                    if not m or rest[0].startswith("export"):
                        break
                    env[m.group(1)] = m.group(2)
                    rest = rest[1:]
            elif base == "timeout" and rest:
                rest = rest[1:]  # the duration
            elif base in ("nice", "chrt", "taskset") and rest and re.fullmatch(r"[0-9a-fx,-]+", rest[0]):
                rest = rest[1:]  # a priority or a CPU mask
            words = rest
        elif _SHELLS.search(w0):
            for i in range(1, len(words)):
                if not words[i].startswith("-") or words[i] == "--":
                    break
                if "c" in words[i][1:] and not words[i].startswith("--"):
                    return [], env, (words[i + 1] if i + 1 < len(words) else "")
            break
        else:
            break
    while words and words[-1] in (")", "}", "))"):
        words = words[:-1]
    return words, env, None


_SUBST_SPACE = "\x1f"
_REDIRECT = re.compile(r"^(?:[0-9]*(?:>>?|<<?<?|>\||<>)&?[0-9-]*|&>>?)$")
_REDIRECT_GLUED = re.compile(r"^(?:[0-9]*(?:>>?|<)&?|&>>?)[^<>&]")


def _drop_redirections(words: list[str]) -> list[str]:
    """``words`` without redirections (``> log``, ``2>&1``, ``&>>log``, ``<in``): they are not arguments."""
    out: list[str] = []
    i = 0
    while i < len(words):
        w = words[i]
        if _REDIRECT.match(w):
            i += 1 if "&" in w[1:] and w[-1].isdigit() or w.endswith("-") else 2  # `2>&1` stands alone
            continue
        if _REDIRECT_GLUED.match(w) and not w.startswith("--"):
            i += 1
            continue
        out.append(w)
        i += 1
    return out


def _protect_substitutions(part: str) -> str:
    """``part`` with the white space inside ``$(...)`` and backquotes replaced by a marker, so ``shlex`` keeps a
    command substitution in one word (``X=$(cd a; pwd)`` is one assignment)."""
    if "$(" not in part and "`" not in part:
        return part
    out = []
    depth = 0
    quote = ""
    back = False
    i = 0
    while i < len(part):
        ch = part[i]
        if quote == "'" and not depth and not back:
            if ch == "'":
                quote = ""
        elif ch == "'" and not depth and not back and quote != '"':
            quote = "'"
        elif ch == '"' and not depth and not back:
            quote = "" if quote == '"' else '"'
        elif part.startswith("$(", i):
            depth += 1
            out.append("$(")
            i += 2
            continue
        elif ch == "(" and depth:
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
        elif ch == "`":
            back = not back
        elif ch.isspace() and (depth or back):
            ch = _SUBST_SPACE
        out.append(ch)
        i += 1
    return "".join(out)


def split_commands(line: str) -> list[str]:
    """The commands of one logical line, split at ``;``, ``&&``, ``||``, ``|`` and a background ``&`` that stand
    outside quotes, ``$(...)`` and backquotes (``echo "a;b"`` is one command; ``2>&1`` and ``&>`` are
    redirections, not separators); an unquoted ``#`` starting a word ends the line. Linear in the line."""
    parts: list[str] = []
    start = 0
    i = 0
    n = len(line)
    quote = ""  # ', " or `
    paren = 0  # depth inside $( ... )
    while i < n:
        ch = line[i]
        if quote == "'":
            if ch == "'":
                quote = ""
        elif ch == "\\":
            i += 2
            continue
        elif quote == '"':
            if ch == '"':
                quote = ""
            elif ch == "$" and line.startswith("$(", i):
                paren += 1
                i += 2
                continue
            elif ch == ")" and paren:
                paren -= 1
        elif quote == "`":
            if ch == "`":
                quote = ""
        elif ch in "'\"`":
            quote = ch
        elif ch == "$" and line.startswith("$(", i):
            paren += 1
            i += 2
            continue
        elif paren:
            if ch == "(":
                paren += 1
            elif ch == ")":
                paren -= 1
        elif ch == "#" and (i == 0 or line[i - 1] in " \t;&|("):
            break
        elif ch == ";" or (ch == "|" and not line.startswith("|&", i)) or (
                ch == "&" and not (i > 0 and line[i - 1] in "<>") and not line.startswith("&>", i)):
            parts.append(line[start:i])
            j = i + 1
            if j < n and line[j] == ch:  # && || ;;
                j += 1
            start = i = j
            continue
        i += 1
    parts.append(line[start:i] if i < n else line[start:])
    return [p for p in parts if p.strip()]


def _heredoc(line: str) -> "re.Match[str] | None":
    """The heredoc marker (``<<EOF``, ``<<-'EOF'``) of ``line`` that stands outside quotes (``echo "cat <<EOF"``
    starts no heredoc); None when there is none."""
    quote = ""
    i = 0
    n = len(line)
    while i < n:
        ch = line[i]
        if quote:
            if ch == quote:
                quote = ""
            elif ch == "\\" and quote == '"':
                i += 1
        elif ch == "\\":
            i += 1
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return None
        elif line.startswith("<<", i) and not line.startswith("<<<", i):
            return _HEREDOC.match(line, i)
        i += 1
    return None


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
    lines: dict[str, int] = {}
    for lineno, line in logical:
        _parse_line(lineno, line, commands, assignments, unparsed, lines=lines)
    return Script(commands=commands, assignments=assignments, heredocs=heredocs, comments=comments, text=text,
                  unparsed=unparsed, assignment_lines=lines)


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
