"""Integrations with training frameworks. Each submodule imports its framework when it is imported; nothing
in trainfit's core imports this package."""
