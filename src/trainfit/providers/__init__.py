"""Cloud providers, one folder each: SDK client and credentials, job writers and readers, submit, refresh, and
the provider's platform rules (``rules.yaml``). Every provider is registered in :mod:`trainfit.providers.registry`
(a :class:`~trainfit.providers.registry.ProviderSpec`); adding one = a registration + catalog rows (+ its rules and a
render target for its job files)."""
