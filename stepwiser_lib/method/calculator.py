"""A non-neural process reward model: check the explicit arithmetic of each step.

The CPU baseline of notebook 05. For every ``lhs = rhs`` pair in a step where both
sides are purely numeric expressions (numbers, ``+ - * / ^``, parentheses, ``\\times``,
``\\cdot``, ``\\div``, ``\\frac{a}{b}``) and the left side performs an operation, the left side is
evaluated exactly (fractions) and compared with the stated right side, within the rounding of
its printed decimals. A step is judged wrong if any such equation is false; the prediction on a
solution is the first wrong step (ProcessBench protocol), else -1.

It only sees explicit calculations: algebra with variables, reasoning errors and wrong set-ups
are invisible to it, so it is a floor any learned judge should beat.
"""

from __future__ import annotations

import ast
import re
from fractions import Fraction

_REPL = [
    (re.compile(r"\\left|\\right|\\!|\\,|\\;|\\quad|\\qquad"), ""),
    (re.compile(r"\\(?:times|cdot)|×|·"), "*"),
    (re.compile(r"\\div|÷"), "/"),
    (re.compile(r"\\[dt]?frac\{([^{}]+)\}\{([^{}]+)\}"), r"((\1)/(\2))"),
    (re.compile(r"\\\$|\$"), ""),
    (re.compile(r"(?<=\d),(?=\d{3}\b)"), ""),  # thousands separators
    (re.compile(r"−|–"), "-"),
    (re.compile(r"\^"), "**"),
    (re.compile(r"\\approx|≈"), "≈"),
]
_EXPR_CHARS = r"[0-9.\s+\-*/()]"
_TAIL = re.compile(rf"{_EXPR_CHARS}*$")
_HEAD = re.compile(rf"^{_EXPR_CHARS}*")
_MAX_POW = 100


def normalise(text: str) -> str:
    for pat, rep in _REPL:
        text = pat.sub(rep, text)
    return text


def _eval(expr: str) -> Fraction | None:
    """Exact value of a numeric expression, or None if it is not one."""
    expr = expr.strip()
    if not expr or not re.search(r"\d", expr):
        return None
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return None

    def ev(n):
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)):
            return Fraction(str(n.value))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
            v = ev(n.operand)
            return -v if isinstance(n.op, ast.USub) else v
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            if isinstance(n.op, ast.Add):
                return a + b
            if isinstance(n.op, ast.Sub):
                return a - b
            if isinstance(n.op, ast.Mult):
                return a * b
            if isinstance(n.op, ast.Div):
                if b == 0:
                    raise ZeroDivisionError
                return a / b
            if isinstance(n.op, ast.Pow) and b.denominator == 1 and abs(b) <= _MAX_POW:
                return a ** int(b)
        raise ValueError("not arithmetic")

    try:
        return ev(tree)
    except (ValueError, ZeroDivisionError, OverflowError):
        return None


def _has_op(expr: str) -> bool:
    return bool(re.search(r"[\d)]\s*(?:\*\*|[-+*/])\s*[\d(]", expr))


def _decimals(s: str) -> int:
    m = re.search(r"\.(\d+)\s*$", s.strip())
    return len(m.group(1)) if m else 0


def equations(step: str) -> list[tuple[str, str, bool]]:
    """``(lhs, rhs, ok)`` for every checkable numeric equation in a step."""
    text = normalise(step)
    out = []
    for line in re.split(r"\n+", text):
        if "≈" in line:
            line = line.split("≈")[0]  # approximations are not checked
        parts = line.split("=")
        for left, right in zip(parts, parts[1:]):
            tail = _TAIL.search(left).group(0)
            head = _HEAD.search(right).group(0)
            before = left[: len(left) - len(tail)]
            after = right[len(head) :]
            t, h = tail.strip(), head.strip()
            if not t or not h or not _has_op(t):
                continue
            glued_left = tail[:1] not in (" ", "\t") and re.search(r"[A-Za-z0-9_}\]^]$", before)
            if t[0] in "+-*/)" or glued_left:
                continue  # part of a larger (algebraic) expression: not a pure calculation
            glued_right = head[-1:] not in (" ", "\t") and re.match(r"[A-Za-z({\\^]", after)
            if h[-1] in "+-*/(" or glued_right:
                continue  # e.g. "= 5x": the right side continues symbolically
            lv, rv = _eval(t), _eval(h)
            if lv is None or rv is None:
                continue
            tol = Fraction(1, 2 * 10 ** _decimals(h)) if _decimals(h) else Fraction(0)
            ok = abs(lv - rv) <= tol + Fraction(1, 10**9) or (
                _decimals(h) == 0 and lv.denominator != 1 and abs(lv - rv) < 1
            )  # rounded to an integer
            out.append((t, h, bool(ok)))
    return out


def step_ok(step: str) -> bool:
    return all(ok for _, _, ok in equations(step))


def predict(steps: list[str]) -> int:
    """First step with a false explicit calculation, else -1."""
    for i, s in enumerate(steps):
        if not step_ok(s):
            return i
    return -1
