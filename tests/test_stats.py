import pytest

from stepwiser_lib import stats


def test_mcnemar_exact_literal():
    assert stats.mcnemar_exact(0, 0) == 1.0
    assert stats.mcnemar_exact(3, 0) == pytest.approx(1 / 8)  # all three discordant pairs one way
    assert stats.mcnemar_exact(5, 1) == pytest.approx(7 / 64)  # P(X >= 5), X ~ Bin(6, 1/2)
    assert stats.mcnemar_exact(5, 1, "two-sided") == pytest.approx(14 / 64)
    assert stats.mcnemar_exact(1, 5, "two-sided") == pytest.approx(14 / 64)
    with pytest.raises(ValueError):
        stats.mcnemar_exact(-1, 2)
