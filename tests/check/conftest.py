"""Share the rendered job folders of tests/render with the check tests."""

from tests.render.conftest import rendered  # noqa: F401  (pytest fixture)
