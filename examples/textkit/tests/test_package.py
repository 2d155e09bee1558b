import textkit


def test_version():
    parts = textkit.__version__.split(".")
    assert len(parts) == 3
    assert all(p.isdigit() for p in parts)


def test_public_names_exist():
    for name in textkit.__all__:
        assert callable(getattr(textkit, name)), name


def test_round_trip_through_the_package():
    title = textkit.title_case("a tale of two cities")
    assert title == "A Tale of Two Cities"
    assert textkit.slugify(title) == "a-tale-of-two-cities"
    assert textkit.snake_case(textkit.camel_case(title)) == "a_tale_of_two_cities"
