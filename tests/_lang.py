"""Find English sentences left in text that should be Chinese (``--lang zh`` output, translated messages).

:func:`english_sentences` returns every run of three or more plain English words of which at least two are all
lower case (the function words of a sentence: "is not in the catalog"), after removing what stays English on
purpose in both languages: URLs, text in backquotes (commands), text in double quotes (quoted English document
titles such as "Use preemptible jobs") or single quotes (values shown with ``repr``), flags, paths, and words with
digits, dots, underscores, ``=`` or ``$`` (identifiers, settings, sizes). Names written in capitals ("Hugging Face
Trainer", "Tencent Cloud CVM SDK") and units ("GiB per GPU") are not sentences by that rule.
"""

from __future__ import annotations

import re

_REMOVE = (
    re.compile(r"https?://\S+"),  # URLs
    re.compile(r"`[^`]*`"),  # commands in backquotes
    re.compile(r"\"[^\"\n]*\""),  # quoted English titles, JSON strings
    re.compile(r"'[^'\n]*'"),  # values shown with repr
    re.compile(r"[\x21-\x7e]*/[\x21-\x7e]*"),  # paths, and pairs such as OSS/CPFS
)
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")
_SPLIT = re.compile(r"[\s,;:!?()\[\]{}<>|]+")
_WORD = re.compile(r"[A-Za-z]+\.?")
#: Runs of lower-case words that are names or commands, not sentences.
ALLOWED = {"swift sft", "megatron sft", "swift rlhf", "pip install"}


def english_sentences(text: str) -> list[str]:
    """The English word runs (3+ words, 2+ of them all lower case) of ``text``; ``[]`` when it reads as Chinese."""
    found: list[str] = []
    text = str(text)
    for pat in _REMOVE:
        text = pat.sub(" ", text)
    for line in _NON_ASCII.sub("\n", text).splitlines():  # Chinese text between two words ends a run
        run: list[str] = []
        for tok in _SPLIT.split(line) + [""]:
            if tok and _WORD.fullmatch(tok):
                run.append(tok.rstrip("."))
                continue
            phrase = " ".join(run)
            for name in ALLOWED:
                phrase = phrase.replace(name, "")
            kept = phrase.split()
            if len(kept) >= 3 and sum(1 for w in kept if w.islower()) >= 2:
                found.append(" ".join(run))
            run = []
    return found
