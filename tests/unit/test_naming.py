import pytest

from shared.naming import bucket_name_problem


@pytest.mark.parametrize("name", ["my-bucket", "abc", "a.b.c", "team-llm-data-123", "x" * 63])
def test_valid_bucket_names(name: str) -> None:
    assert bucket_name_problem(name) is None


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("ab", "3 to 63"),
        ("x" * 64, "3 to 63"),
        ("My-Bucket", "lowercase"),
        ("-bucket", "start and end"),
        ("bucket-", "start and end"),
        ("a..b", "adjacent"),
        ("a.-b", "adjacent"),
        ("192.168.1.1", "IP address"),
        ("xn--bucket", "xn--"),
        ("bucket-s3alias", "-s3alias"),
        ("bad_name", "lowercase"),
        ("../../etc", "lowercase"),
    ],
)
def test_invalid_bucket_names_say_why(name: str, fragment: str) -> None:
    problem = bucket_name_problem(name)
    assert problem is not None and fragment in problem
