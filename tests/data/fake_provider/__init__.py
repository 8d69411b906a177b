"""A provider from outside ``src/``, as a plug-in would ship one (tests/test_extension.py; the recipe in
docs/architecture.md): this folder is the whole provider. Importing it registers its :class:`ProviderSpec`; its
platform rules are ``rules.yaml`` here, its instance rows and list price ``catalog.yaml`` here (an overlay), its
per-region prices come from ``trainfit catalog refresh --provider fakecloud --public-prices --url FILE``
(:mod:`.refresh`)."""

from __future__ import annotations

from pathlib import Path

from trainfit.providers.registry import ProviderSpec, RefreshSource, register_provider

CATALOG = Path(__file__).with_name("catalog.yaml")
"""Its catalog rows: pass it as the overlay (``--catalog``, ``TRAINFIT_CATALOG_OVERLAY``) or copy them into yours."""

SPEC = register_provider(ProviderSpec(
    name="fakecloud", resource_classes=("fake-gpu",), rules_package=__name__,
    price_howto="`trainfit catalog refresh --provider fakecloud --public-prices --url FILE`",
    regional_price_howto="--region {region} changes nothing for the price of {its}: no source gives a regional "
                         "price (`trainfit catalog refresh --provider fakecloud --public-prices --url FILE` reads "
                         "fakecloud's per-region prices)",
    platforms={"fake-gpu": "fakecloud"}, default_regions={"fake-gpu": "fk-north-1"},
    refresh=(RefreshSource(name="fakecloud", kind="public", run=f"{__name__}.refresh:refresh_request",
                           misuse=("--provider fakecloud reads fakecloud's price list: add --public-prices",
                                   "trainfit catalog refresh --provider fakecloud --public-prices --url FILE")),)))
