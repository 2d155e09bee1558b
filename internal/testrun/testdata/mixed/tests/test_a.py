import sys

import pytest


class TestX:
    class TestInner:
        def test_deep(self):
            pass

    @pytest.mark.parametrize("v", ["a.b", "c::d", 3])
    def test_p(self, v):
        assert v != 3


def test_skip():
    pytest.skip("not today")


@pytest.mark.xfail
def test_xfail():
    assert 0


@pytest.fixture
def broken():
    raise RuntimeError("fixture broke")


def test_setup_error(broken):
    pass


@pytest.fixture
def bad_teardown():
    yield
    raise RuntimeError("teardown broke")


def test_fail_and_teardown(bad_teardown):
    assert 1 == 2


def test_pass_then_teardown(bad_teardown):
    print("to stdout")
    print("to stderr", file=sys.stderr)
