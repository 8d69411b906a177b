"""Parsers (``parse``) and rules (``rules``) behind ``trainfit check``; the public API is
:mod:`trainfit.check`."""
