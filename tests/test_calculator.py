import pytest

from stepwiser_lib.method import calculator as C


@pytest.mark.parametrize(
    "step,ok",
    [
        ("3 + 4 = 7", True),
        ("3 + 4 = 8", False),
        ("The cost is $12 \\times 3 = \\$36$.", True),
        ("The cost is $12 \\times 3 = \\$37$.", False),
        ("10/3 = 3.33", True),  # rounded as printed
        ("10/3 = 3.5", False),
        ("2^3 = 8", True),
        ("2^3 = 9", False),
        ("\\frac{1}{2} + \\frac{1}{3} = \\frac{5}{6}", True),
        ("5 * 4 = 21 apples", False),
        ("1,000 + 250 = 1,250", True),
        ("2x + 3 = 7", True),  # algebra is not checked
        ("x - 3 = 5", True),
        ("f(3) = 2 + 3 = 6", False),
        ("It is about 10/3 ≈ 3", True),  # approximations are not checked
        ("No numbers here.", True),
    ],
)
def test_step_checks(step, ok):
    assert C.step_ok(step) is ok


def test_predict_first_wrong_step():
    assert C.predict(["We add.", "3 + 4 = 7", "7 * 2 = 15", "15 - 1 = 13"]) == 2
    assert C.predict(["3 + 4 = 7", "7 * 2 = 14"]) == -1
