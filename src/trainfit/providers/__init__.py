"""Cloud providers, one folder each: SDK client and credentials, job writers and readers, submit, refresh, and
the provider's platform rules (``rules.yaml``). Adding a provider = a folder here + catalog rows + rules."""
