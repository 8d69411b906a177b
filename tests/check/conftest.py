"""Share the rendered job folders of tests/launch with the check tests."""

from tests.launch.conftest import rendered  # noqa: F401  (pytest fixture)
