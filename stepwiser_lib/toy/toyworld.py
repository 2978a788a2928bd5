"""The toy world: procedurally generated multi-step arithmetic with exactly checkable steps.

Real models and NuminaMath cannot be downloaded on the CPU machines this companion is
built and tested on, so every stage also runs on this world (docs/toy_world.md).
Nothing here is a mock: the toy policy really generates solutions in the style below and the
checker really decides which of its steps are right.

A problem is a chain of variable definitions over small integers::

    a = 12. b = 4. c = a + 7. d = c * 3. Find d.

(variables are named in the order they are defined). A *raw-style* solution is written the way
instruct LLMs write (paper §3.1): paragraphs separated by a blank line, where one logical unit is sometimes split into fragments ("Next, find b." on its
own paragraph) and two units are sometimes merged into one paragraph::

    We need d.

    c = a + 7 = 12 + 7 = 19

    d = c * 3 = 19 * 3 = 57

    So the answer is \\boxed{57}.

The rule-based segmentation teacher (:func:`teacher_segment`) groups paragraphs into
``<chunk>...</chunk>`` units following the paper's Table 1 principles.

Problem splits are disjoint by construction: the hash of a problem's text decides the one split
it may belong to (:data:`SPLIT_BUCKETS`), so no evaluation problem can appear in training data.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import asdict, dataclass, field

from ..core.chunks import CHUNK_CLOSE, CHUNK_OPEN, parse_chunks, split_paragraphs, strip_tags  # noqa: F401 (re-exported for toy code)

# ----------------------------------------------------------------------------- problems

#: Hash buckets (of 100) per split. Disjoint ranges make every split disjoint from every other,
#: whatever seeds and sizes are used.  # [not in paper]
SPLIT_BUCKETS: dict[str, range] = {
    "base_train": range(0, 50),  # corpus of the toy base model ("pretraining")
    "sft": range(50, 60),  # notebook 01: self-segmentation data
    "label": range(60, 75),  # notebooks 02-04: rollout labelling / judge training
    "rsft": range(75, 80),  # notebook 07: RS-FT training prompts
    "eval_dev": range(80, 85),  # policy evaluation for choices (recipes, temperatures): never reported
    "eval": range(85, 90),  # held-out accuracy (Table 4/7/8 analogues): the policy's test split
    "processbench": range(90, 100),  # toy-ProcessBench (notebook 05)
}

VAR_NAMES = "abcdefghjkmnpqrstuvwxyz"  # no i, l, o: easy to confuse with digits


@dataclass(frozen=True)
class Definition:
    """One line of a problem: ``name = value`` or ``name = left op right``."""

    name: str
    value: int
    op: str | None = None  # None for a constant, else one of "+", "-", "*"
    left: str | None = None  # variable name (ops always start from a variable)
    right: str | None = None  # variable name or integer literal, as text

    @property
    def expr(self) -> str:
        return str(self.value) if self.op is None else f"{self.left} {self.op} {self.right}"


@dataclass(frozen=True)
class Problem:
    id: str
    text: str
    defs: tuple[Definition, ...]
    target: str
    answer: int
    needed: tuple[str, ...]  # computed variables on the path to the target, in order
    difficulty: dict = field(default_factory=dict, compare=False, hash=False)

    @property
    def values(self) -> dict[str, int]:
        return {d.name: d.value for d in self.defs}

    def definition(self, name: str) -> Definition:
        for d in self.defs:
            if d.name == name:
                return d
        raise KeyError(name)

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "text": self.text,
            "target": self.target,
            "answer": self.answer,
            "needed": list(self.needed),
            "defs": [asdict(d) for d in self.defs],
            "difficulty": dict(self.difficulty),
        }

    @classmethod
    def from_dict(cls, d: dict) -> Problem:
        return cls(
            id=d["id"],
            text=d["text"],
            target=d["target"],
            answer=int(d["answer"]),
            needed=tuple(d["needed"]),
            defs=tuple(Definition(**x) for x in d["defs"]),
            difficulty=dict(d.get("difficulty", {})),
        )


def apply_op(op: str, x: int, y: int) -> int:
    if op == "+":
        return x + y
    if op == "-":
        return x - y
    if op == "*":
        return x * y
    raise ValueError(f"unknown operator {op!r}")


def _problem_bucket(text: str) -> int:
    return int(hashlib.sha1(text.encode()).hexdigest(), 16) % 100


def _make_op(rng: random.Random, name: str, env: dict[str, int], pool: list[str], max_value: int) -> Definition | None:
    left = rng.choice(pool)
    x = env[left]
    op = rng.choice(["+", "+", "-", "*"])
    use_var = rng.random() < 0.4 and len(env) > 1
    if op == "*":
        right = str(rng.randint(2, 4))
    elif use_var:
        right = rng.choice([v for v in env if v != left])
    else:
        right = str(rng.randint(1, 30))
    y = env[right] if right in env else int(right)
    v = apply_op(op, x, y)
    if v < 0 or v > max_value:
        return None
    return Definition(name=name, value=v, op=op, left=left, right=right)


def generate_problem(rng: random.Random, n_steps: int, n_distractors: int, max_value: int = 99) -> Problem:
    """One problem with ``n_steps`` computed variables on the target's path.

    The target depends on every needed step (each step uses the previous one as its left
    operand), constants are 1..50, ``*`` multiplies by 2..4 and every value stays in
    ``0..max_value`` so that a tiny model can learn the arithmetic.
    """
    while True:
        names = rng.sample(VAR_NAMES, n_steps + 1 + n_distractors + 1)
        env: dict[str, int] = {}
        defs: list[Definition] = []
        c0 = names.pop()
        env[c0] = rng.randint(1, 50)
        defs.append(Definition(c0, env[c0]))
        if rng.random() < 0.5:  # a second constant the chain may use
            c1 = names.pop()
            env[c1] = rng.randint(1, 50)
            defs.append(Definition(c1, env[c1]))
        chain: list[str] = []
        prev = c0
        ok = True
        for _ in range(n_steps):
            name = names.pop()
            for _try in range(30):
                d = _make_op(rng, name, env, [prev], max_value)
                if d is not None:
                    break
            else:
                ok = False
                break
            defs.append(d)
            env[name] = d.value
            chain.append(name)
            prev = name
        if not ok:
            continue
        # Distractors: constants or operations that the target does not depend on.
        for _ in range(n_distractors):
            name = names.pop()
            d = None
            if rng.random() < 0.5:
                d = _make_op(rng, name, env, list(env), max_value)
            if d is None:
                d = Definition(name, rng.randint(1, 50))
            pos = rng.randint(1, len(defs))
            # A distractor must come after the variables it uses.
            if d.op is not None:
                used = {d.left, d.right}
                pos = max(pos, max(i for i, x in enumerate(defs) if x.name in used) + 1)
            defs.insert(pos, d)
            env[name] = d.value
        # Names follow the order of definition (a, b, c, ...): a tiny model then finds a
        # definition by its letter instead of tracking arbitrary names.  # [not in paper]
        rename = {d.name: VAR_NAMES[i] for i, d in enumerate(defs)}
        defs = [
            Definition(rename[d.name], d.value, d.op, rename.get(d.left), rename.get(d.right, d.right)) for d in defs
        ]
        target = rename[chain[-1]]
        text = " ".join(f"{d.name} = {d.expr}." for d in defs) + f" Find {target}."
        return Problem(
            id="",
            text=text,
            defs=tuple(defs),
            target=target,
            answer=env[chain[-1]],
            needed=tuple(rename[c] for c in chain),
            difficulty={"n_steps": n_steps, "n_distractors": n_distractors},
        )


def generate_problems(
    split: str,
    n: int,
    seed: int,
    steps: tuple[int, int] = (2, 4),
    distractors: tuple[int, int] = (0, 2),
    max_value: int = 99,
) -> list[Problem]:
    """``n`` distinct problems of one split (see :data:`SPLIT_BUCKETS`), deterministic in ``seed``.

    ``steps`` and ``distractors`` are inclusive ranges of the number of computed steps on the
    target's path and of unrelated definitions.
    """
    if split not in SPLIT_BUCKETS:
        raise ValueError(f"unknown split {split!r}; valid: {sorted(SPLIT_BUCKETS)}")
    buckets = SPLIT_BUCKETS[split]
    rng = random.Random(f"{split}:{seed}")
    out: list[Problem] = []
    seen: set[str] = set()
    attempts = 0
    while len(out) < n:
        attempts += 1
        if attempts > 200 * n + 1000:
            raise RuntimeError(f"could not generate {n} distinct problems for split {split!r}")
        p = generate_problem(rng, rng.randint(*steps), rng.randint(*distractors), max_value)
        if p.text in seen or _problem_bucket(p.text) not in buckets:
            continue
        seen.add(p.text)
        out.append(
            Problem(
                id=f"{split}-{seed}-{len(out)}",
                text=p.text,
                defs=p.defs,
                target=p.target,
                answer=p.answer,
                needed=p.needed,
                difficulty=p.difficulty,
            )
        )
    return out


_DEF_RE = re.compile(r"^([a-z]) = (?:(\d+)|([a-z]) ([-+*]) ([a-z]|\d+))$")


def parse_problem(text: str, id: str = "") -> Problem:
    """Rebuild a :class:`Problem` from its text (``a = 12. b = a + 7. Find b.``), e.g. for
    judge prompts that carry only the text. Raises ValueError on anything else."""
    parts = [x.strip() for x in text.strip().split(".") if x.strip()]
    if not parts or not parts[-1].startswith("Find "):
        raise ValueError(f"not a toy problem: {text!r}")
    target = parts[-1][5:].strip()
    env: dict[str, int] = {}
    defs = []
    for part in parts[:-1]:
        m = _DEF_RE.match(part)
        if not m:
            raise ValueError(f"not a toy definition: {part!r}")
        name, const, left, op, right = m.groups()
        if const is not None:
            d = Definition(name, int(const))
        else:
            if left not in env or (not right.isdigit() and right not in env):
                raise ValueError(f"{part!r} uses an undefined variable")
            y = env[right] if right in env else int(right)
            d = Definition(name, apply_op(op, env[left], y), op, left, right)
        env[name] = d.value
        defs.append(d)
    if target not in env:
        raise ValueError(f"target {target!r} is not defined")
    # the chain of computed variables the target depends on
    needed, stack = [], [target]
    deps = {d.name: [x for x in (d.left, d.right) if x in env] for d in defs if d.op}
    while stack:
        v = stack.pop()
        if v in deps and v not in needed:
            needed.append(v)
            stack.extend(deps[v])
    order = [d.name for d in defs]
    return Problem(
        id=id,
        text=text,
        defs=tuple(defs),
        target=target,
        answer=env[target],
        needed=tuple(sorted(needed, key=order.index)),
    )


def problem_split(text: str) -> str:
    """The only split a problem text can belong to."""
    b = _problem_bucket(text)
    for name, r in SPLIT_BUCKETS.items():
        if b in r:
            return name
    raise AssertionError(b)


# ----------------------------------------------------------------------------- solutions

INTROS = ["Next, find {v}.", "Now compute {v}.", "We need {v} first.", "Then {v}."]
OPENERS = ["We need {t}.", "The question asks for {t}.", "Let us find {t} step by step."]
FINALS = [
    "So the answer is \\boxed{{{a}}}.",
    "Therefore {t} = {a}, so the answer is \\boxed{{{a}}}.",
    "The answer is \\boxed{{{a}}}.",
]
MERGE_JOIN = [", so ", ". Then "]


def statement(
    d: Definition, values: dict[str, int], stated: int | None = None, operands: tuple[int, int] | None = None
) -> str:
    """``b = a + 7 = 12 + 7 = 19``; ``stated``/``operands`` override the true numbers (errors)."""
    if d.op is None:
        raise ValueError("constants are not computed")
    x = values[d.left]
    y = values[d.right] if d.right in values else int(d.right)
    if operands is not None:
        x, y = operands
    v = apply_op(d.op, x, y) if stated is None else stated
    return f"{d.name} = {d.expr} = {x} {d.op} {y} = {v}"


def raw_solution(
    problem: Problem, rng: random.Random, p_intro: float = 0.35, p_merge: float = 0.25, p_opener: float = 0.5
) -> str:
    """A correct solution in the raw LLM style: ``\\n\\n`` paragraphs, with fragments and merges.

    The solution works forward through the problem's operations in order (distractor
    operations included: valid but unnecessary steps, as LLMs often write), so no backward
    planning is needed: a tiny model can learn it in minutes.
    """
    values = problem.values
    paras: list[str] = []
    if rng.random() < p_opener:
        paras.append(rng.choice(OPENERS).format(t=problem.target))
    ops = [d.name for d in problem.defs if d.op is not None]
    i = 0
    while i < len(ops):
        d = problem.definition(ops[i])
        if rng.random() < p_intro:
            paras.append(rng.choice(INTROS).format(v=d.name))
        text = statement(d, values)
        if i + 1 < len(ops) and rng.random() < p_merge:
            text += rng.choice(MERGE_JOIN) + statement(problem.definition(ops[i + 1]), values)
            i += 1
        paras.append(text)
        i += 1
    paras.append(rng.choice(FINALS).format(t=problem.target, a=problem.answer))
    return "\n\n".join(paras)


# ----------------------------------------------------------------------------- checker

STATEMENT_RE = re.compile(r"\b([a-z]) = ([a-z]) ([-+*]) ([a-z]|\d+) = (\d+) ([-+*]) (\d+) = (\d+)\b")
RESTATE_RE = re.compile(r"\b([a-z]) = (\d+)\b(?! [-+*])")  # "Therefore c = 57, ..."
ANY_EQ_RE = re.compile(r"\b[a-z] = ")
BOXED_RE = re.compile(r"\\boxed\{([^{}]*)\}")
INTRO_RE = re.compile(r"\b(?:find|compute|need|asks for|Then|find) ([a-z])\b")


@dataclass
class StepCheck:
    """What the exact checker found in one step (a paragraph or a chunk)."""

    ok: bool
    reasons: list[str]
    statements: list[dict]  # one per parsed statement
    boxed: str | None = None


def last_boxed(text: str) -> str | None:
    """The toy checker's answer reader: content of the last flat ``\\boxed{...}`` (toy answers
    are integers, never braced), or None. Real answers use :func:`stepwiser_lib.core.chunks.last_boxed`,
    which balances nested braces."""
    m = BOXED_RE.findall(text)
    return m[-1].strip() if m else None


def check_step(problem: Problem, step: str, values: dict[str, int] | None = None) -> StepCheck:
    """Check every statement in ``step`` against the problem's definitions and true values.

    A step is wrong if a statement uses an expression that differs from the problem's
    definition of that variable, substitutes an operand value other than the true one, gets the
    arithmetic wrong, names an undefined variable, contains an ``x = ...`` that does not parse,
    or boxes a wrong final answer. A step with no statement (an intro) is correct.
    """
    values = problem.values if values is None else values
    reasons: list[str] = []
    stmts: list[dict] = []
    for m in STATEMENT_RE.finditer(step):
        name, left, op, right, xs, op2, ys, vs = m.groups()
        x, y, v = int(xs), int(ys), int(vs)
        rec = {"name": name, "x": x, "y": y, "op": op, "stated": v, "span": m.span()}
        stmts.append(rec)
        try:
            d = problem.definition(name)
        except KeyError:
            reasons.append(f"{name} is not defined in the problem")
            continue
        if d.op is None or (d.left, d.op, d.right) != (left, op, right) or op2 != op:
            reasons.append(f"{name} is defined as {d.expr}, not {left} {op} {right}")
            continue
        tx = values[d.left]
        ty = values[d.right] if d.right in values else int(d.right)
        rec["true"] = d.value
        if (x, y) != (tx, ty):
            reasons.append(f"{name}: operands {x}, {y} should be {tx}, {ty}")
        elif apply_op(op, x, y) != v:
            reasons.append(f"{name}: {x} {op} {y} = {apply_op(op, x, y)}, not {v}")
    covered = [s["span"] for s in stmts]
    for m in RESTATE_RE.finditer(step):
        name, v = m.group(1), int(m.group(2))
        covered.append(m.span())
        if name not in values:
            reasons.append(f"{name} is not defined in the problem")
        elif values[name] != v:
            reasons.append(f"{name} is {values[name]}, not {v}")
    # Any assignment-looking text that the statement grammar did not cover is malformed.
    for m in ANY_EQ_RE.finditer(step):
        if not any(a <= m.start() < b for a, b in covered):
            reasons.append(f"unreadable statement at {step[m.start() : m.start() + 20]!r}")
    boxed = last_boxed(step)
    if "\\boxed" in step and boxed is None:
        reasons.append("malformed \\boxed")
    if boxed is not None and boxed != str(problem.answer):
        reasons.append(f"final answer {boxed}, expected {problem.answer}")
    return StepCheck(ok=not reasons, reasons=reasons, statements=stmts, boxed=boxed)


def first_error(problem: Problem, steps: list[str]) -> int:
    """Index of the first wrong step, or -1 (ProcessBench's label convention, 0-based)."""
    for i, s in enumerate(steps):
        if not check_step(problem, s).ok:
            return i
    return -1


def is_correct(problem: Problem, solution: str) -> bool:
    """Outcome reward r*: the last boxed answer equals the true answer."""
    return last_boxed(solution) == str(problem.answer)


# ----------------------------------------------------------------------------- teacher


def _is_fragment(par: str) -> bool:
    """A paragraph with no statement and no answer: it only announces what comes next."""
    return not STATEMENT_RE.search(par) and "\\boxed" not in par


def teacher_segment(text: str) -> str:
    """Rule-based segmentation teacher (toy stand-in for Llama-3.1-70B-it, paper §3.1, Table 1).

    Principles, applied to ``\\n\\n`` paragraphs:
    * unified purpose: a fragment that only announces a computation ("Next, find b.") joins the
      paragraph that carries it out, so one chunk = one objective;
    * logical cohesion: a computation paragraph is never split (two merged computations stay one
      chunk: splitting inside a paragraph would alter the text);
    * clear transition: the final conclusion (the boxed answer) is a chunk of its own.
    Format rules: only tagged content, chunks separated by the original blank lines, text kept
    byte for byte (so :func:`stepwiser_lib.method.segmentation.reconstructs` holds).
    """
    paras = text.split("\n\n")
    groups: list[list[str]] = []
    pending: list[str] = []
    for p in paras:
        pending.append(p)
        if not _is_fragment(p):
            groups.append(pending)
            pending = []
    if pending:  # trailing fragments join the last chunk
        if groups:
            groups[-1].extend(pending)
        else:
            groups.append(pending)
    return "\n\n".join(CHUNK_OPEN + "\n\n".join(g) + CHUNK_CLOSE for g in groups)


# ----------------------------------------------------------------------------- check text


def check_text(problem: Problem, step: str) -> str:
    """Generic checking text for one step: re-derive each stated result, then subtract.

    ``check c: 19 * 3 = 57; stated 56; 57 - 56 = 1`` (the comparison made an
    arithmetic step the model already knows: a 3M model did not learn to compare two numbers
    directly, 60% after 800 SFT steps). A zero difference means the stated value is right.
    No verdict words: this is base-model text, never a label.
    """
    values = problem.values
    lines: list[str] = []
    for m in STATEMENT_RE.finditer(step):
        name, left, op, right, xs, op2, ys, vs = m.groups()
        try:
            d = problem.definition(name)
        except KeyError:
            lines.append(f"check {name}: not defined")
            continue
        if d.op is None:
            lines.append(f"check {name}: not defined")
            continue
        tx = values[d.left]
        ty = values[d.right] if d.right in values else int(d.right)
        t = apply_op(d.op, tx, ty)
        v = int(vs)
        hi, lo = max(t, v), min(t, v)
        lines.append(f"check {name}: {tx} {d.op} {ty} = {t}; stated {v}; {hi} - {lo} = {hi - lo}")
    for m in RESTATE_RE.finditer(step):
        name, v = m.group(1), int(m.group(2))
        if name not in values:
            lines.append(f"check {name}: not defined")
            continue
        t = values[name]
        hi, lo = max(t, v), min(t, v)
        lines.append(f"check {name}: {name} = {t}; stated {v}; {hi} - {lo} = {hi - lo}")
    boxed = last_boxed(step)
    if boxed is not None and boxed.isdigit():
        v, t = int(boxed), problem.answer
        hi, lo = max(t, v), min(t, v)
        lines.append(f"check answer: {problem.target} = {t}; stated {v}; {hi} - {lo} = {hi - lo}")
    if not lines:
        lines.append("check: no new value")
    return "\n".join(lines)


def restate_text(step: str) -> str:
    """An analysis that only restates what a step states, computing nothing: ``stated c = 62``,
    one line per stated value, then ``stated answer = 61`` for a boxed answer. The warm-up of the
    ``restate_rl`` ablation (notebook 04): a format to write with no value derived from the
    problem, so whatever checking the judge does after RL, RL taught it. [not in paper]
    """
    stated = [(m.start(), m.group(1), int(m.group(8))) for m in STATEMENT_RE.finditer(step)]
    stated += [(m.start(), m.group(1), int(m.group(2))) for m in RESTATE_RE.finditer(step)]
    lines = [f"stated {name} = {v}" for _, name, v in sorted(stated)]
    boxed = last_boxed(step)
    if boxed is not None and boxed.isdigit():
        lines.append(f"stated answer = {int(boxed)}")
    return "\n".join(lines or ["stated: no new value"])


def derive_text(problem: Problem, step: str) -> str:
    """The toy judge's analysis of a step: restate, re-derive, then compare (notebook 04). [not in paper]

    First every value the step states, copied as it stands (:func:`restate_text`'s
    ``stated c = 62`` lines). Then, for each of them, the correct derivation of that variable from
    the problem, written like a solution line (``c = b + 6 = 55 + 6 = 61``, each variable once,
    dependencies first), and a comparison in the style of :func:`check_text`:
    ``check c: c = 61; stated 62; 62 - 61 = 1``. Writing the chain out turns "what should this
    operand be?" into solution steps a small policy model already writes, instead of a recall of
    values several steps back; copying the stated values first keeps the comparison from copying
    the value just derived instead (``LAB_LOG.md``, issue 47: a warm-up wrote ``stated 83`` for a
    chunk's 84 in half its wrong analyses). A zero difference in every ``check`` line means the
    step is right; a name the problem does not define gives ``check x: not defined``. No verdict
    words: the verdict is the judge's to add.
    """
    values = problem.values
    defs = {d.name: d for d in problem.defs}
    done: set[str] = set()
    lines: list[str] = []

    def derive(name: str) -> None:
        d = defs[name]
        if d.op is None or name in done:
            return
        for v in (d.left, d.right):
            if v in defs:
                derive(v)
        done.add(name)
        lines.append(statement(d, values))

    def compare(label: str, name: str, v: int) -> None:
        t = values[name]
        hi, lo = max(t, v), min(t, v)
        lines.append(f"check {label}: {name} = {t}; stated {v}; {hi} - {lo} = {hi - lo}")

    stated = [(m.start(), m.group(1), int(m.group(8))) for m in STATEMENT_RE.finditer(step)]
    stated += [(m.start(), m.group(1), int(m.group(2))) for m in RESTATE_RE.finditer(step)]
    for _, name, v in sorted(stated):
        if name not in defs:
            lines.append(f"check {name}: not defined")
            continue
        derive(name)
        compare(name, name, v)
    boxed = last_boxed(step)
    if boxed is not None and boxed.isdigit():
        derive(problem.target)
        compare("answer", problem.target, int(boxed))
    if not lines:
        return "check: no new value"
    return restate_text(step) + "\n" + "\n".join(lines)


_CHECK_DIFF_RE = re.compile(r"^check [^:]*:.*; (\d+) - (\d+) = (\d+)\.?$")


def derive_implied_ok(text: str) -> bool | None:
    """The verdict an analysis in :func:`derive_text`'s format implies: every ``check`` line's
    difference is 0 (and nothing is "not defined") -> right. None when there is no readable
    check line (e.g. a model's broken output)."""
    diffs, seen = [], False
    for line in text.strip().splitlines():
        line = line.strip()
        if not line.startswith("check"):
            continue
        if "no new value" in line:
            seen = True
            continue
        if "not defined" in line:
            return False
        m = _CHECK_DIFF_RE.match(line)
        if m:
            diffs.append(int(m.group(3)))
    if not diffs:
        return True if seen else None
    return all(d == 0 for d in diffs)


def corrupt_statement(problem: Problem, d: Definition, rng: random.Random) -> str:
    """A wrong version of the statement for ``d``: an arithmetic slip or a wrong operand."""
    values = problem.values
    x = values[d.left]
    y = values[d.right] if d.right in values else int(d.right)
    v = apply_op(d.op, x, y)
    if rng.random() < 0.6:
        delta = rng.choice([-10, -2, -1, 1, 1, 2, 10])
        return statement(d, values, stated=max(0, v + delta) if v + delta != v else v + 1)
    dx = rng.choice([-2, -1, 1, 2, 10])
    x2 = max(0, x + dx) if x + dx != x else x + 1
    return statement(d, values, operands=(x2, y))


def check_example(
    problem: Problem, rng: random.Random, p_wrong: float = 0.5, chunked: bool | None = None
) -> tuple[str, str, str]:
    """``(history, step, check)`` for generic check text: a correct history, then one step that
    is wrong with probability ``p_wrong`` (only the new step can be wrong)."""
    sol = raw_solution(problem, rng)
    units = split_paragraphs(sol)
    if chunked if chunked is not None else rng.random() < 0.5:
        units = [strip_tags(c) for c in parse_chunks(teacher_segment(sol))]
    k = rng.randrange(len(units))
    history, step = units[:k], units[k]
    if rng.random() < p_wrong:
        m = list(STATEMENT_RE.finditer(step))
        if m:
            mm = rng.choice(m)
            d = problem.definition(mm.group(1))
            step = step[: mm.start()] + corrupt_statement(problem, d, rng) + step[mm.end() :]
        elif "\\boxed" in step:
            wrong = problem.answer + rng.choice([-2, -1, 1, 1, 2, 10])
            step = step.replace(f"\\boxed{{{problem.answer}}}", f"\\boxed{{{max(0, wrong)}}}")
            step = step.replace(f"= {problem.answer},", f"= {max(0, wrong)},")
    return "\n\n".join(history), step, check_text(problem, step)


# ----------------------------------------------------------------------------- solutions with errors

#: How a sampled step goes wrong (:func:`noisy_solution`), with their weights: the kinds the toy
#: policy's own wrong chunks show (LAB_LOG.md, issue 47: carried values, arithmetic slips, a wrong
#: operand, the wrong expression, a variable the problem does not define). [not in paper]
ERROR_KINDS = {"slip": 3, "operand": 2, "expression": 2, "undefined": 1}


def _noisy_statement(
    d: Definition, belief: dict[str, int], problem: Problem, rng: random.Random, p_error: float
) -> tuple[str, str, int]:
    """One statement for ``d`` computed from the values a solver believes (``belief``, which may
    already be wrong), erring with probability ``p_error``. Returns (name written, text, value)."""
    name, left, right = d.name, d.left, d.right
    x = belief[left]
    y = belief[right] if right in belief else int(right)
    v = None
    if rng.random() < p_error:
        kind = rng.choices(list(ERROR_KINDS), weights=list(ERROR_KINDS.values()))[0]
        delta = rng.choice([-10, -2, -1, 1, 1, 2, 10])
        others = [u for u in belief if u not in (left, name)]
        if kind == "slip":
            v = max(0, apply_op(d.op, x, y) + delta)
        elif kind == "operand":
            x = max(0, x + delta)
        elif kind == "expression" and others:
            left = rng.choice(others)
            x = belief[left]
        elif kind == "undefined":
            unused = [c for c in VAR_NAMES if c not in problem.values]
            name = rng.choice(unused) if unused else name
    if v is None:
        v = apply_op(d.op, x, y)
        if v < 0:  # statements hold non-negative numbers: this step comes out right instead
            name, left = d.name, d.left
            x, y, v = problem.values[d.left], problem.values.get(right, None), d.value
            y = y if y is not None else int(right)
    return name, f"{name} = {left} {d.op} {right} = {x} {d.op} {y} = {v}", v


def noisy_solution(
    problem: Problem,
    rng: random.Random,
    p_error: float = 0.2,
    p_intro: float = 0.35,
    p_merge: float = 0.25,
    p_opener: float = 0.5,
) -> str:
    """A raw-style solution (:func:`raw_solution`'s paragraphs, intros and merges) whose steps err
    the way a sampled policy errs: each computed step goes wrong with probability ``p_error``
    (:data:`ERROR_KINDS`), and every later step, restatement and the boxed answer use the values
    the solver then believes, so one error is carried forward as the toy policy carries it.
    Generic toy-world text for the toy base's checking corpus (:func:`derive_example`); no label
    and no verdict. [not in paper]"""
    belief = {d.name: d.value for d in problem.defs if d.op is None}  # the constants are read off
    paras: list[str] = []
    if rng.random() < p_opener:
        paras.append(rng.choice(OPENERS).format(t=problem.target))
    ops = [d for d in problem.defs if d.op is not None]
    i = 0
    while i < len(ops):
        d = ops[i]
        if rng.random() < p_intro:
            paras.append(rng.choice(INTROS).format(v=d.name))
        name, text, v = _noisy_statement(d, belief, problem, rng, p_error)
        belief[d.name] = v if name == d.name else problem.values[d.name]  # a misnamed step is not carried
        if i + 1 < len(ops) and rng.random() < p_merge:
            name2, text2, v2 = _noisy_statement(ops[i + 1], belief, problem, rng, p_error)
            belief[ops[i + 1].name] = v2 if name2 == ops[i + 1].name else problem.values[ops[i + 1].name]
            text += rng.choice(MERGE_JOIN) + text2
            i += 1
        paras.append(text)
        i += 1
    answer = belief.get(problem.target, problem.answer)
    if rng.random() < p_error / 2:  # a slip in the final line itself
        answer = max(0, answer + rng.choice([-2, -1, 1, 1, 2, 10]))
    paras.append(rng.choice(FINALS).format(t=problem.target, a=answer))
    return "\n\n".join(paras)


def derive_example(problem: Problem, rng: random.Random, p_error: float = 0.2) -> tuple[list[str], str, str]:
    """``(history, step, analysis)``: a step of a :func:`noisy_solution` (a paragraph, or half the
    time a chunk of the rule teacher's segmentation), the units before it as they were written
    (errors included), and the judge's analysis of the step (:func:`derive_text`). The toy base's
    checking documents of its last phase (``make toy-base``). [not in paper]"""
    sol = noisy_solution(problem, rng, p_error)
    units = split_paragraphs(sol)
    if rng.random() < 0.5:
        units = [strip_tags(c) for c in parse_chunks(teacher_segment(sol))]
    k = rng.randrange(len(units))
    return units[:k], units[k], derive_text(problem, units[k])
