"""argparse's own user-facing messages, listed so that the catalog extracts them and the coverage test sees them.

argparse looks its words up through the ``_``/``ngettext`` bound in its module; while the CLI builds and parses,
:func:`trainfit.cli._argparse_language` points them at trainfit's catalog, so these ids (exactly as written in
``argparse.py`` of CPython 3.10, 3.11, 3.12 and 3.13, the versions trainfit supports) are shown in the user's
language. Messages for programming mistakes (conflicting option strings, a bad ``dest=``...) are left out: a user
of the CLI cannot cause them.

Nothing here is called at run time.
"""

from __future__ import annotations

from trainfit.i18n import N_, ngettext

ARGPARSE_IDS = (
    # help output
    N_("usage: "),
    N_("positional arguments"),
    N_("options"),
    N_("show this help message and exit"),
    N_("subcommands"),  # 3.13
    N_("%(heading)s:"),  # 3.13
    N_(" (default: %(default)s)"),  # 3.13
    N_("show program's version number and exit"),  # 3.13
    # errors a command line can cause
    N_("argument %(argument_name)s: %(message)s"),  # 3.11+
    N_("%(prog)s: error: %(message)s\n"),
    N_("%(prog)s: warning: %(message)s\n"),  # 3.13
    N_("the following arguments are required: %s"),
    N_("one of the arguments %s is required"),
    N_("unrecognized arguments: %s"),
    N_("not allowed with argument %s"),
    N_("ignored explicit argument %r"),
    N_("expected one argument"),
    N_("expected at most one argument"),
    N_("expected at least one argument"),
    N_("ambiguous option: %(option)s could match %(matches)s"),
    N_("unexpected option string: %s"),
    N_("invalid %(type)s value: %(value)r"),
    N_("invalid choice: %(value)r (choose from %(choices)s)"),
    N_("unknown parser %(parser_name)r (choices: %(choices)s)"),
    N_("can't open '%(filename)s': %(error)s"),
    N_('argument "-" with mode %r'),
    N_("command '%(parser_name)s' is deprecated"),  # 3.13
    N_("option '%(option)s' is deprecated"),  # 3.13
    N_("argument '%(argument_name)s' is deprecated"),  # 3.13
)


def _plural_ids(n: int) -> tuple[str, ...]:  # pragma: no cover - never called: lists the plural ids for extraction
    return (ngettext("expected %s argument", "expected %s arguments", n),)
