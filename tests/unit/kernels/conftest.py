"""Fixtures for the reference-kernel tests; shared helpers live in ``kernel_testing``."""

import numpy as np
import pytest


@pytest.fixture
def rng() -> np.random.Generator:
    """A deterministic generator per test."""
    return np.random.default_rng(1234)
