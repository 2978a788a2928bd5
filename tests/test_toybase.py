import hashlib
import json
from pathlib import Path

from stepwiser_lib.core import prompts
from stepwiser_lib.engines.models import HFGenerator, load_tokenizer
from stepwiser_lib.toy import toybase, toyworld


def test_manifest_matches_files(toy_base_dir):
    d = Path(toy_base_dir)
    man = json.loads((d / "manifest.json").read_text())
    files = {f.name for f in d.iterdir() if f.is_file() and f.name != "manifest.json"}
    assert set(man["files"]) == files
    for name, digest in man["files"].items():
        assert hashlib.sha256((d / name).read_bytes()).hexdigest() == digest, name
    total = sum(f.stat().st_size for f in d.iterdir())
    assert total < 20 * 2**20  # the committed-checkpoint budget
    assert man["config"]["parameters"] > 1e6
    # Rollouts must be informative (neither always right nor always wrong): the foundation issue
    # targeted 30-80% sampled accuracy; the fourth phase's arithmetic practice took it to 86%, where
    # 103 of 160 labelling prompts still pass notebook 02's pre-filter (LAB_LOG.md, issue 47).
    assert 0.30 <= man["eval"]["accuracy_sampled_t1"] <= 0.90
    assert man["eval"]["accuracy_greedy"] >= 0.35
    # the judges build on the checking skill, in the judge's analysis format (issue 47)
    assert man["eval"]["derive_implied_verdict_accuracy"] >= 0.90 and man["eval"]["derive_exact_match"] >= 0.75
    # four phases (make toy-base): from scratch, continued on more checking text, then with
    # chunk-prompt documents (tagged paragraphs) so that the base can write tags when asked, then
    # with checking text in the judge's analysis format on solutions that may carry errors
    assert [ph["training"]["max_steps"] for ph in man["phases"]] == [1000, 600, 500, 800]
    assert [ph["training"].get("chunk_fraction", 0.0) for ph in man["phases"]] == [0.0, 0.0, 0.8, 0.8]
    assert [ph["training"].get("derive_fraction", 0.0) for ph in man["phases"]] == [0.0, 0.0, 0.0, 0.5]
    assert man["phases"][-1]["files"] == man["files"]
    # asked for chunks, the base writes them (one per paragraph) and still solves
    assert man["eval"]["chunk_prompt_format_ok_sampled_t1"] >= 0.8
    assert man["eval"]["chunk_prompt_accuracy_sampled_t1"] >= 0.30


def test_corpus_hash_reproduces_from_seed(toy_base_dir):
    """`make toy-base` is deterministic: the same seed gives the same corpus as the manifest."""
    man = json.loads((Path(toy_base_dir) / "manifest.json").read_text())
    t = man["training"]
    docs = toybase.corpus(
        t.get("corpus_seed", man["seed"]),
        t["max_steps"] * t["batch_size"],
        t["check_fraction"],
        t.get("chunk_fraction", 0.0),
        t.get("derive_fraction", 0.0),
    )
    h = hashlib.sha256("\x00".join(a + "\x01" + b for a, b in docs).encode()).hexdigest()
    assert h == t["corpus_sha256"]
    # generic text only: no verdicts, no evaluation problems
    assert not any("Positive" in b or "Negative" in b for _, b in docs[:5000])
    assert all(toyworld.problem_split(a.split("Problem: ")[1].split("\n")[0]) == "base_train" for a, _ in docs[:2000])


def test_tokenizer_contract(toy_base_dir):
    tok = load_tokenizer(toy_base_dir)
    for w in ["<chunk>", "</chunk>", "Positive", "Negative", tok.eos_token]:
        assert len(tok(w, add_special_tokens=False)["input_ids"]) == 1, w
    assert tok.decode(tok("<chunk>b = 12</chunk>", add_special_tokens=False)["input_ids"]) == "<chunk>b = 12</chunk>"
    assert [tok.decode([i]) for i in tok(" 123", add_special_tokens=False)["input_ids"]] == [" 1", "2", "3"]
    text = tok.apply_chat_template([{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)
    assert text == "<|user|>\nhi<|end|>\n<|assistant|>\n"
    assert tok.padding_side == "left"


def test_loads_through_from_pretrained_and_solves(toy_model):
    model, tok = toy_model
    gen = HFGenerator(model, tok, batch_size=32)
    probs = toyworld.generate_problems("eval", 32, seed=123)
    outs = gen.generate(
        [prompts.TOY_BASE_POLICY.format(problem=p.text) for p in probs], n=1, temperature=0, max_new_tokens=160
    )
    acc = sum(toyworld.is_correct(p, o[0].text) for p, o in zip(probs, outs)) / len(probs)
    assert acc >= 0.2, acc  # a real solver, not noise
    assert all(o[0].finished for o in outs[:8])


def test_chunk_documents_tag_paragraphs_never_the_teacher_segmentation():
    """Phase 3's chunk-prompt documents: every blank-line paragraph one chunk (the paper's "split
    by \\n\\n" in the tag format), the text kept byte for byte; the teacher's merges are left
    for notebook 01 to teach. Without chunk documents the corpus is the earlier phases' one."""
    from stepwiser_lib.core import chunks

    docs = toybase.corpus(7, 400, 0.5, 0.5)
    chunked = [(a, b) for a, b in docs if a.startswith(prompts.TOY_CHUNK_POLICY.split("{")[0])]
    assert 60 < len(chunked) < 140  # about a quarter of 400
    for _, b in chunked:
        raw = chunks.strip_tags(b)
        assert chunks.parse_chunks(b) == raw.split("\n\n")
    assert any(toyworld.teacher_segment(chunks.strip_tags(b)) != b for _, b in chunked)  # the teacher would merge
    assert toybase.corpus(7, 400, 0.5) == toybase.corpus(7, 400, 0.5, 0.0)
    assert all(not a.startswith("Solve step by step") for a, _ in toybase.corpus(7, 400, 0.5))


def test_evaluate_reads_the_policy_dev_split_never_the_reported_one():
    """Issue 35: a choice between toy bases reads eval_dev; the eval split holds Tables 4, 7 and 8's problems."""
    from stepwiser_lib.toy import toybase, toyworld

    assert toybase.EVALUATE_SPLIT == "eval_dev"
    dev = {p.text for p in toyworld.generate_problems(toybase.EVALUATE_SPLIT, 256, seed=0)}
    assert not dev & {p.text for p in toyworld.generate_problems("eval", 400, seed=0)}


def test_eval_lines_say_the_committed_manifest_in_words():
    from stepwiser_lib.core import io
    from stepwiser_lib.core.paths import TOY_BASE_DIR
    from stepwiser_lib.toy import toybase

    ev = io.read_json(TOY_BASE_DIR / "manifest.json")["eval"]
    lines = toybase.eval_lines(ev)
    assert len(lines) == 4 and f"{100 * ev['accuracy_greedy']:.1f}% greedy" in lines[1]
    assert f"{100 * ev['chunk_prompt_format_ok_sampled_t1']:.1f}% in the chunk format" in lines[2]
    assert f"{ev['mean_paragraphs_greedy']:.1f} paragraphs per greedy solution" in lines[1]  # not the sampled count
    assert "eval_dev" in toybase.eval_lines({**ev, "eval_split": "eval_dev"})[0]
