"""Provider: see docs/architecture.md."""
