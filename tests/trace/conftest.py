"""Fixtures for the trace tests."""

import pytest

from _trace_tiny import tiny_qwen3, tiny_qwen3_moe


@pytest.fixture
def dense():
    return tiny_qwen3()


@pytest.fixture
def moe():
    return tiny_qwen3_moe()
