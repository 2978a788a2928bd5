import random

import pytest

from stepwiser_lib.toy import toyworld as tw


@pytest.fixture(scope="module")
def problems():
    return tw.generate_problems("base_train", 300, seed=3, steps=(1, 5), distractors=(0, 3))


def test_generator_is_deterministic_and_distinct():
    a = tw.generate_problems("eval", 50, seed=7)
    b = tw.generate_problems("eval", 50, seed=7)
    c = tw.generate_problems("eval", 50, seed=8)
    assert [p.text for p in a] == [p.text for p in b]
    assert [p.text for p in a] != [p.text for p in c]
    assert len({p.text for p in a}) == 50


def test_problem_values_are_consistent(problems):
    for p in problems:
        env = {}
        for d in p.defs:
            if d.op is None:
                env[d.name] = d.value
            else:
                y = env[d.right] if d.right in env else int(d.right)
                assert tw.apply_op(d.op, env[d.left], y) == d.value  # defined before use
                env[d.name] = d.value
            assert 0 <= d.value <= 99
        assert env[p.target] == p.answer
        assert p.text.endswith(f"Find {p.target}.")
        assert len(p.needed) == p.difficulty["n_steps"]


def test_splits_are_disjoint():
    texts = {s: {p.text for p in tw.generate_problems(s, 200, seed=0)} for s in tw.SPLIT_BUCKETS}
    names = list(texts)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            assert not texts[a] & texts[b], (a, b)
        assert all(tw.problem_split(t) == a for t in texts[a])
    with pytest.raises(ValueError, match="unknown split"):
        tw.generate_problems("nope", 1, 0)


def test_every_generated_step_verifies(problems):
    rng = random.Random(0)
    for p in problems:
        sol = tw.raw_solution(p, rng)
        steps = tw.split_paragraphs(sol)
        assert tw.first_error(p, steps) == -1, (p.text, sol)
        assert tw.is_correct(p, sol)
        assert all(tw.check_step(p, s).ok for s in steps)


def _prob():
    defs = (
        tw.Definition("a", 12),
        tw.Definition("d", 4),
        tw.Definition("b", 19, "+", "a", "7"),
        tw.Definition("c", 57, "*", "b", "3"),
    )
    return tw.Problem(
        id="t", text="a = 12. d = 4. b = a + 7. c = b * 3. Find c.", defs=defs, target="c", answer=57, needed=("b", "c")
    )


@pytest.mark.parametrize(
    "step,ok,reason",
    [
        ("b = a + 7 = 12 + 7 = 19", True, None),
        ("Next, find b.", True, None),
        ("b = a + 7 = 12 + 7 = 18", False, "not 18"),  # arithmetic slip
        ("b = a + 7 = 13 + 7 = 20", False, "operands"),  # wrong substituted value
        ("b = a + 8 = 12 + 8 = 20", False, "defined as"),  # wrong expression
        ("x = a + 7 = 12 + 7 = 19", False, "not defined"),
        ("b = a + 7 = 12 + 7", False, "unreadable"),  # truncated statement
        ("So the answer is \\boxed{57}.", True, None),
        ("So the answer is \\boxed{56}.", False, "final answer"),
        ("Therefore c = 56, so the answer is \\boxed{57}.", False, "not 56"),
        ("b = a + 7 = 12 + 7 = 19, so c = b * 3 = 19 * 3 = 57", True, None),
        ("b = a + 7 = 12 + 7 = 19, so c = b * 3 = 19 * 3 = 58", False, "not 58"),
    ],
)
def test_check_step_literal_cases(step, ok, reason):
    r = tw.check_step(_prob(), step)
    assert r.ok is ok, r.reasons
    if reason:
        assert any(reason in x for x in r.reasons), r.reasons


def test_first_error_index():
    p = _prob()
    assert tw.first_error(p, ["b = a + 7 = 12 + 7 = 19", "c = b * 3 = 19 * 3 = 57", "\\boxed{57}"]) == -1
    assert tw.first_error(p, ["We need c.", "b = a + 7 = 12 + 7 = 18", "c = b * 3 = 18 * 3 = 54"]) == 1


def test_teacher_rules_and_round_trip(problems):
    p = _prob()
    raw = (
        "We need c.\n\nNext, find b.\n\nb = a + 7 = 12 + 7 = 19\n\n"
        "c = b * 3 = 19 * 3 = 57\n\nSo the answer is \\boxed{57}."
    )
    seg = tw.teacher_segment(raw)
    chunks = tw.parse_chunks(seg)
    # unified purpose: announcements join the computation; clear transition: answer alone
    assert chunks == [
        "We need c.\n\nNext, find b.\n\nb = a + 7 = 12 + 7 = 19",
        "c = b * 3 = 19 * 3 = 57",
        "So the answer is \\boxed{57}.",
    ]
    assert tw.strip_tags(seg) == raw
    rng = random.Random(1)
    fewer = 0
    for q in problems:
        raw = tw.raw_solution(q, rng)
        seg = tw.teacher_segment(raw)
        assert tw.strip_tags(seg) == raw
        n_par, n_chunk = len(tw.split_paragraphs(raw)), len(tw.parse_chunks(seg))
        assert n_chunk <= n_par
        fewer += n_chunk < n_par
        assert tw.last_boxed(tw.parse_chunks(seg)[-1]) is not None
    assert fewer > len(problems) // 3  # segmentation really merges fragments
    assert p.answer == 57


def test_check_text_difference_is_zero_iff_step_is_right(problems):
    from stepwiser_lib.toy.toybase import check_implied_ok

    rng = random.Random(2)
    n_wrong = 0
    for p in problems:
        for _ in range(3):
            hist, step, check = tw.check_example(p, rng)
            truth = tw.check_step(p, step).ok
            n_wrong += not truth
            implied = check_implied_ok(check)
            if implied is not None:
                assert implied == truth, (step, check)
            assert "Positive" not in check and "Negative" not in check  # no verdict words
    assert 0.3 < n_wrong / (3 * len(problems)) < 0.7


def test_problem_round_trips_through_dict(problems):
    p = problems[0]
    assert tw.Problem.from_dict(p.to_dict()) == p


def test_parse_problem_round_trip(problems):
    for p in problems[:100]:
        q = tw.parse_problem(p.text, id=p.id)
        assert (q.defs, q.target, q.answer) == (p.defs, p.target, p.answer)
        assert set(p.needed) <= set(q.needed)  # the chain, plus variables it also uses
    with pytest.raises(ValueError, match="not a toy"):
        tw.parse_problem("What is 2 + 2?")


def test_derive_text_literal():
    p = tw.parse_problem("a = 25. b = a + 30. c = b + 6. d = 4. Find c.")
    # the stated values first, as written; then each derivation and its comparison
    assert tw.derive_text(p, "c = b + 6 = 55 + 6 = 62") == (
        "stated c = 62\nb = a + 30 = 25 + 30 = 55\nc = b + 6 = 55 + 6 = 61\ncheck c: c = 61; stated 62; 62 - 61 = 1"
    )
    # each variable derived once; the boxed answer is compared with the target
    assert tw.derive_text(p, "b = a + 30 = 25 + 30 = 55, so c = b + 6 = 55 + 6 = 61. \\boxed{61}") == (
        "stated b = 55\nstated c = 61\nstated answer = 61\n"
        "b = a + 30 = 25 + 30 = 55\ncheck b: b = 55; stated 55; 55 - 55 = 0\n"
        "c = b + 6 = 55 + 6 = 61\ncheck c: c = 61; stated 61; 61 - 61 = 0\n"
        "check answer: c = 61; stated 61; 61 - 61 = 0"
    )
    assert tw.derive_text(p, "Therefore z = 3.") == "stated z = 3\ncheck z: not defined"
    assert tw.derive_text(p, "We need c.") == "check: no new value"


def test_derive_implied_ok_literal():
    ok = tw.derive_implied_ok
    assert ok("b = a + 30 = 25 + 30 = 55\ncheck b: b = 55; stated 55; 55 - 55 = 0") is True
    assert ok("b = a + 30 = 25 + 30 = 55\ncheck b: b = 55; stated 56; 56 - 55 = 1") is False
    assert ok("check b: b = 55; stated 55; 55 - 55 = 0\ncheck z: not defined") is False
    assert ok("check: no new value") is True
    assert ok("b = a + 30 = 25 + 30 = 55") is None  # a derivation line is not a comparison
    assert ok("") is None and ok("garbage") is None


def test_derive_text_implies_the_exact_checker(problems):
    """The analysis is a faithful re-derivation: its implied verdict is the checker's."""
    rng = random.Random(3)
    n = 0
    for p in problems:
        for _ in range(3):
            _, step, _ = tw.check_example(p, rng)
            text = tw.derive_text(p, step)
            assert "Positive" not in text and "Negative" not in text
            assert tw.derive_implied_ok(text) == tw.check_step(p, step).ok, (step, text)
            n += 1
    assert n >= 30


def test_noisy_solutions_err_like_the_policy_and_their_analysis_implies_the_checker(problems):
    """derive_example (the toy base's last-phase checking text, issue 47): steps of solutions that
    carry errors forward; the analysis implies the exact checker's verdict (a wrong operand whose
    result is still right is the one known exception) and writes no verdict word."""
    rng = random.Random(4)
    n = agree = wrong = carried = 0
    for p in problems:
        for _ in range(4):
            hist, step, text = tw.derive_example(p, rng)
            truth = tw.check_step(p, step).ok
            n += 1
            agree += tw.derive_implied_ok(text) == truth
            wrong += not truth
            carried += not truth and any(not tw.check_step(p, h).ok for h in hist)
            assert "Positive" not in text and "Negative" not in text
    assert agree / n > 0.98 and 0.2 < wrong / n < 0.45 and carried > 0
    # every step errs at p_error 1, and a wrong value is carried into the next step
    p = tw.parse_problem("a = 25. b = a + 30. c = b + 6. Find c.")
    sol = tw.noisy_solution(p, random.Random(1), p_error=1.0, p_intro=0, p_merge=0, p_opener=0)
    steps = tw.split_paragraphs(sol)
    assert len(steps) == 3 and not any(tw.check_step(p, x).ok for x in steps[:2]), sol
    assert tw.noisy_solution(p, random.Random(1), p_error=0.0) == tw.noisy_solution(p, random.Random(1), p_error=0.0)
