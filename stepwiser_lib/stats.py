"""Small statistics the comparisons use (stdlib only). Each function: one formula, one literal test."""

from __future__ import annotations

from math import comb


def mcnemar_exact(b: int, c: int, alternative: str = "greater") -> float:
    """Exact McNemar test on paired binary outcomes: ``b`` pairs where only the first is right,
    ``c`` where only the second is. Under the null each discordant pair goes either way with
    probability 1/2, so ``b ~ Binomial(b + c, 1/2)``.

    ``alternative="greater"``: P(X >= b), small when the first is right more often;
    ``"two-sided"``: twice the smaller tail, capped at 1. No discordant pairs: 1.0."""
    n = b + c
    if b < 0 or c < 0:
        raise ValueError(f"counts must be >= 0, got b={b}, c={c}")
    if n == 0:
        return 1.0
    upper = sum(comb(n, k) for k in range(b, n + 1)) / 2 ** n
    if alternative == "greater":
        return upper
    if alternative == "two-sided":
        lower = sum(comb(n, k) for k in range(0, b + 1)) / 2 ** n
        return min(1.0, 2 * min(upper, lower))
    raise ValueError(f"alternative must be 'greater' or 'two-sided', not {alternative!r}")
