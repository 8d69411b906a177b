"""Subcommands of the ``trainfit`` CLI, one module each (see :mod:`trainfit.cli`)."""
