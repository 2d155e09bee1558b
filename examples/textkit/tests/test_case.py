import pytest

from textkit import case


@pytest.mark.parametrize(
    "name, snake, kebab",
    [
        ("parseHTTPResponse", "parse_http_response", "parse-http-response"),
        ("PascalCase", "pascal_case", "pascal-case"),
        ("Some Words here", "some_words_here", "some-words-here"),
        ("", "", ""),
    ],
)
def test_snake_and_kebab(name, snake, kebab):
    assert case.snake_case(name) == snake
    assert case.kebab_case(name) == kebab


@pytest.mark.parametrize(
    "name, want",
    [
        ("parse_http_response", "parseHttpResponse"),
        ("Hello world", "helloWorld"),
        ("", ""),
    ],
)
def test_camel_case(name, want):
    assert case.camel_case(name) == want


def test_camel_case_upper_first():
    assert case.camel_case("user id", upper_first=True) == "UserId"


def test_pascal_case():
    assert case.pascal_case("make-it-so") == "MakeItSo"


def test_constant_case():
    assert case.constant_case("maxRetryCount") == "MAX_RETRY_COUNT"


class TestTitleCase:
    def test_small_words_stay_lower(self):
        assert case.title_case("the lord of the rings") == "The Lord of the Rings"

    def test_last_word_capitalised(self):
        assert case.title_case("what are you looking at") == "What Are You Looking At"

    def test_acronyms_kept(self):
        assert case.title_case("a NASA report on the iPhone") == "A NASA Report on the iPhone"

    def test_shouting_is_lowered(self):
        assert case.title_case("STOP that") == "STOP That"

    def test_custom_small_words(self):
        assert case.title_case("war and peace", small_words={"peace"}) == "War And Peace"

    def test_empty(self):
        assert case.title_case("") == ""


@pytest.mark.parametrize(
    "text, kwargs, want",
    [
        ("Hello, World!", {}, "hello-world"),
        ("Crème brûlée recipe", {}, "creme-brulee-recipe"),
        ("  many   spaces  ", {}, "many-spaces"),
        ("Snake Slug", {"separator": "_"}, "snake_slug"),
        ("a fairly long title for a post", {"max_length": 14}, "a-fairly-long"),
        ("unbreakablewordhere", {"max_length": 6}, "unbrea"),
        ("short", {"max_length": 10}, "short"),
    ],
)
def test_slugify(text, kwargs, want):
    assert case.slugify(text, **kwargs) == want


@pytest.mark.parametrize("text, want", [("Hello", "hELLO"), ("abc-XYZ 1", "ABC-xyz 1"), ("é", "é")])
def test_swap_case(text, want):
    assert case.swap_case(text) == want


@pytest.mark.parametrize(
    "text, ignore_case, want",
    [
        ("A man, a plan, a canal: Panama", True, True),
        ("Racecar", False, False),
        ("hello", True, False),
        ("", True, True),
    ],
)
def test_is_palindrome(text, ignore_case, want):
    assert case.is_palindrome(text, ignore_case=ignore_case) is want


@pytest.mark.parametrize(
    "text, min_length, want",
    [
        ("portable network graphics", 2, "PNG"),
        ("the art of computer programming", 2, "ACP"),
        ("solo", 2, ""),
    ],
)
def test_acronym(text, min_length, want):
    assert case.acronym(text, min_length=min_length) == want
