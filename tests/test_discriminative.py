"""The discriminative "+"/"-" baseline: conversation format, verdict-only loss mask, inference."""

import pytest

from stepwiser_lib.engines.trainers import SFTSettings
from stepwiser_lib.method import discriminative as disc


@pytest.fixture(scope="module")
def tok(toy_base_dir):
    from stepwiser_lib.engines.models import load_tokenizer

    return load_tokenizer(toy_base_dir)


def test_conversation_is_rlhflow_style():
    msgs = disc.conversation("P", ["s1", "s2"], "s3", label=False)
    assert [m["role"] for m in msgs] == ["user", "assistant"] * 3
    assert msgs[0]["content"] == "P\n\ns1" and msgs[2]["content"] == "s2" and msgs[4]["content"] == "s3"
    assert [m["content"] for m in msgs if m["role"] == "assistant"] == ["+", "+", "-"]
    assert disc.conversation("P", [], "s1")[-1] == {"role": "user", "content": "P\n\ns1"}


def test_verdict_tokens_are_single_tokens(tok):
    ids = disc.verdict_ids(tok)
    assert ids[True] != ids[False]
    assert tok.decode([ids[True]]) == "+" and tok.decode([ids[False]]) == "-"


@pytest.mark.parametrize("label", [True, False])
def test_only_the_final_verdict_token_carries_loss(tok, label):
    r = disc.encode(
        tok, "a = 3. b = a + 4. Find b.", ["First, a = 3.", "b = a + 4 = 3 + 4 = 7"], "The answer is \\boxed{7}.", label
    )
    mask, ids = r["completion_mask"], r["input_ids"]
    assert len(mask) == len(ids) and sum(mask) == 1
    i = mask.index(1)
    assert ids[i] == disc.verdict_ids(tok)[label]
    # the history verdicts are in the context ("+") but carry no loss
    plus = disc.verdict_ids(tok)[True]
    assert sum(1 for j, t in enumerate(ids) if t == plus and j != i) == 2
    # the text before the verdict is exactly the inference prompt
    assert ids[:i] == disc._prefix_ids(
        tok, "a = 3. b = a + 4. Find b.", ["First, a = 3.", "b = a + 4 = 3 + 4 = 7"], "The answer is \\boxed{7}."
    )
    # ...and what follows is the end-of-turn, never trained
    assert tok.decode(ids[i + 1 :]).startswith(tok.eos_token)


def test_encode_rejects_a_multi_token_verdict(tok, monkeypatch):
    monkeypatch.setitem(disc.VERDICT_TOKEN, True, "++ok")
    with pytest.raises(ValueError, match="single-token|one token"):
        disc.encode(tok, "P", [], "c", True)


def test_disc_training_and_inference(toy_base_dir, tmp_path):
    """A few SFT steps move P(+) towards the labels; inference returns the judge result format."""
    import random

    from stepwiser_lib.toy import toyworld as tw

    rng = random.Random(0)
    ex = []
    for p in tw.generate_problems("label", 32, seed=5):
        hist, step, _ = tw.check_example(p, rng)
        ex.append({"problem": p.text, "history": [hist] if hist else [], "chunk": step, "label": True})
    triples = [(e["problem"], e["history"], e["chunk"]) for e in ex[:6]]
    before = disc.DiscJudge.load(toy_base_dir).scores(triples)
    assert all(0.3 < s < 0.7 for s in before)  # the base has no opinion on "+" vs "-"
    r = disc.train_disc_judge(
        toy_base_dir, ex, tmp_path, SFTSettings(epochs=4, lr=1e-3, global_batch=16, max_length=1024), progress=False
    )
    assert r["steps"] == 8 and r["records"] == 32
    j = disc.DiscJudge.load(r["model_dir"])
    out = j.judge([(e["problem"], e["history"], e["chunk"]) for e in ex[:6]])
    assert all(set(o) == {"verdict", "analysis", "score", "n_unparsed"} for o in out)
    assert all(o["score"] > 0.9 and o["verdict"] == "Positive" for o in out)  # all-positive labels learnt
    assert j.scores([(ex[0]["problem"], ex[0]["history"], ex[0]["chunk"])])[0] == pytest.approx(
        out[0]["score"], abs=1e-5
    )
