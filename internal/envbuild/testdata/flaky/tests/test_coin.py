import os

import pytest


def test_stable():
    assert 1 + 1 == 2


# Each case passes or fails by a fresh coin toss, so over three runs in
# fresh sandboxes at least one of the ten almost surely changes outcome
# (all ten keep theirs with probability 4**-10).
@pytest.mark.parametrize("case", range(10))
def test_coin(case):
    assert os.urandom(1)[0] % 2 == 0
