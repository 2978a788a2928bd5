"""Allowed values of settings, in one small language that the notebooks' parameters cells and the
library's config dataclasses share, so that both give the same message for the same bad value.

A spec is a type, optionally followed by what is allowed::

    "int in [1, inf)"            # an interval: [ ] closed and ( ) open ends, inf and -inf for no bound
    "float in [0, 1)"
    "str in {toy, numina}"       # choices
    "list[variant]"              # list elements, here judge variants KIND:RULE
    "list[str in {toy, math500}]"  # element choices

A parameters cell writes the type as the annotation and what is allowed at the start of the
comment (:data:`stepwiser_lib.core.config.CONSTRAINT`), so that papermill's parameter inspection,
which reads plain annotations only, lists every parameter with its constraint::

    SHARD_SIZE: int = 16  # in [1, inf); prefixes per shard
    EVAL_TASKS: list[str] = ["toy"]  # each in {toy, math500}; where accuracy is measured

A plain type allows any value of it. Bounds are written as intervals, not ``>= 1``: papermill warns
on a second ``=`` in a line. (``>=``, ``>``, ``<=``, ``<`` are still understood, for the library's
own use.) ``variant`` is a ``str`` that :func:`stepwiser_lib.core.vocab.parse_variant` accepts;
``judge`` one that :func:`stepwiser_lib.core.vocab.parse_judge_name` accepts (a registry name of
notebook 04); both stay quoted annotations (``"list[judge]"``), which papermill also reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .vocab import parse_judge_name, parse_variant

TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "float": (float, int),
    "str": (str,),
    "bool": (bool,),
    "list": (list,),
    "dict": (dict,),
}
NAMED = {"variant": "str", "judge": "str"}  # named element kinds -> their base type


def _num(x: float) -> str:
    """A bound as written: whole numbers in full (4294967295, not 4.29497e+09), others as %g."""
    return (
        str(int(x))
        if isinstance(x, (int, float)) and x == x and abs(x) != float("inf") and float(x).is_integer()
        else f"{x:g}"
    )


class ConfigError(ValueError):
    """A profile or parameter problem, reported before any compute starts."""


@dataclass(frozen=True)
class Spec:
    """A parsed annotation: ``base`` type, ``elem`` (for lists), and at most one of a bound
    (``op``, ``bound``), an interval (``lo``..``hi``) or ``choices``; ``named`` for ``variant``."""

    text: str
    base: str
    elem: Spec | None = None
    op: str | None = None
    bound: float | None = None
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    choices: tuple[str, ...] | None = None
    named: str | None = None

    def allowed(self) -> str:
        """What is allowed, in words, for an error message."""
        if self.named == "variant":
            return "a judge variant KIND:RULE"
        if self.named == "judge":
            return "a notebook 04 judge name"
        if self.choices is not None:
            return "one of " + ", ".join(self.choices)
        if self.op:
            return f"{self.op} {_num(self.bound)}"
        if self.lo is not None:
            return f"in {'(' if self.lo_open else '['}{_num(self.lo)}, {_num(self.hi)}{')' if self.hi_open else ']'}"
        if self.elem is not None:
            return f"a list of {self.elem.text}"
        return f"a {self.base}"


_OPS = {">=": lambda v, b: v >= b, ">": lambda v, b: v > b, "<=": lambda v, b: v <= b, "<": lambda v, b: v < b}


def parse(text: str) -> Spec:
    """A :class:`Spec` from an annotation such as ``"int in [1, inf)"``; :class:`ConfigError` on a
    malformed one (a notebook author's mistake, caught by the test of every parameters cell)."""
    t = text.strip().strip("'\"").strip()
    if t in NAMED:
        return Spec(t, NAMED[t], named=t)
    m = re.fullmatch(r"(\w+)(?:\[(.+)\])?\s*(.*)", t)
    if not m or m.group(1) not in TYPES:
        raise ConfigError(f"parameter type {text!r} is not one of {sorted(TYPES)} (with an optional constraint)")
    base, inner, rest = m.group(1), m.group(2), m.group(3).strip()
    elem = parse(inner) if inner else None
    if elem is not None and base != "list":
        raise ConfigError(f"parameter type {text!r}: only a list has element types")
    if not rest:
        return Spec(t, base, elem)
    if base not in ("int", "float", "str"):
        raise ConfigError(f"parameter type {text!r}: only int, float and str take a constraint")
    num = r"(-?(?:inf|[\d.eE+-]+))"
    if m2 := re.fullmatch(r"(>=|>|<=|<)\s*" + num, rest):
        return Spec(t, base, op=m2.group(1), bound=float(m2.group(2)))
    if m2 := re.fullmatch(r"in\s*([(\[])\s*" + num + r"\s*,\s*" + num + r"\s*([)\]])", rest):
        return Spec(
            t,
            base,
            lo=float(m2.group(2)),
            hi=float(m2.group(3)),
            lo_open=m2.group(1) == "(",
            hi_open=m2.group(4) == ")",
        )
    if m2 := re.fullmatch(r"in\s*\{(.+)\}", rest):
        return Spec(t, base, choices=tuple(c.strip() for c in m2.group(1).split(",")))
    raise ConfigError(f"parameter type {text!r}: cannot read the constraint {rest!r}")


def type_ok(value: Any, base: str) -> bool:
    if base in ("int", "float") and isinstance(value, bool):
        return False  # True is an int in Python, but never a sensible count or rate
    return isinstance(value, TYPES[base])


def problem(value: Any, spec: Spec) -> str | None:
    """Why ``value`` is not allowed by ``spec`` (None when it is)."""
    if not type_ok(value, spec.base):
        return f"is not a {spec.base}" if spec.named is None else f"is not {spec.allowed()}"
    if spec.elem is not None:
        for i, v in enumerate(value):
            why = problem(v, spec.elem)
            if why:
                return f"element {i} ({v!r}) {why}"
        return None
    if spec.named in ("variant", "judge"):
        try:
            (parse_variant if spec.named == "variant" else parse_judge_name)(value)
        except ValueError as e:
            return f"is not a judge {'variant' if spec.named == 'variant' else 'name'}: {str(e).split(': ', 1)[1]}"
        return None
    if spec.choices is not None and str(value) not in spec.choices:
        return f"is not allowed (want {spec.allowed()})"
    if spec.op and not _OPS[spec.op](value, spec.bound):
        return f"is not allowed (want {spec.allowed()})"
    if spec.lo is not None:
        lo_ok = value > spec.lo if spec.lo_open else value >= spec.lo
        hi_ok = value < spec.hi if spec.hi_open else value <= spec.hi
        if not (lo_ok and hi_ok):
            return f"is not allowed (want {spec.allowed()})"
    return None


def check(owner: str, name: str, value: Any, spec: Spec | str) -> None:
    """Raise :class:`ConfigError` ``"<owner>: <name> = <value> is not allowed (want ...)"``."""
    spec = parse(spec) if isinstance(spec, str) else spec
    why = problem(value, spec)
    if why:
        raise ConfigError(f"{owner}: {name} = {value!r} {why} (declared `{name.split(' ')[0]}: {spec.text}`)")


def check_fields(obj: Any, specs: dict[str, str], params: dict[str, str] | None = None) -> None:
    """``__post_init__`` of a config dataclass: every field in ``specs`` checked, the message
    naming the class, the field (and the notebook parameter it comes from, ``params``), the value
    and what is allowed: ``GRPOSettings: steps (GRPO_STEPS) = 0 is not allowed (want in [1, inf))``."""
    for name, spec in specs.items():
        label = f"{name} ({params[name]})" if params and name in params else name
        check(type(obj).__name__, label, getattr(obj, name), spec)
