import no_such_module_anywhere


def test_never_collected():
    pass
