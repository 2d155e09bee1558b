import time

import pytest


@pytest.fixture(autouse=True)
def _settle():
    # Stands for the I/O real suites wait on (fixtures, files, services):
    # it makes the whole suite take several seconds, as suites worth a
    # test-to-code map do.
    time.sleep(0.125)
    yield
