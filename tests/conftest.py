import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(20261121)


@pytest.fixture(scope="session")
def ablation_runs():
    """A short ablation for the lesson 08 widget: two d_k, two divisors, two seeds."""
    from attnlab.lessons import ablation

    return ablation.run_ablation(d_ks=(16, 64), divisors=("1", "√d_k"), seeds=(0, 1), steps=40)
