"""The judge's training and inference plumbing on the real toy base model (notebook 04)."""

import random

import pytest

from stepwiser_lib.engines.trainers import GRPOSettings
from stepwiser_lib.method import judge, judge_train
from stepwiser_lib.toy import toyworld as tw


@pytest.fixture(scope="module")
def examples():
    return make_examples()


def test_grpo_smoke_run_changes_the_adapter(toy_base_dir, examples, tmp_path):
    """A few TRL GRPO steps with LoRA: the adapter moves away from its (zero-effect) init.

    The untrained base writes no verdict, so the verdict reward would be 0 for every sample and
    GRPO's advantages (hence gradients) would be exactly 0. A reward with variance (completion
    length) exercises the same machinery."""
    from safetensors.torch import load_file

    def length_reward(completions, **kw):
        return [len(c[-1]["content"] if isinstance(c, list) else c) / 50 for c in completions]

    s = GRPOSettings(
        steps=2,
        prompts_per_step=2,
        group_size=4,
        max_completion=24,
        eval_every=1,
        temperature=1.5,
        updates_per_step=2,
        micro_batch=4,
    )  # 2 updates per step
    r = judge_train.train_grpo_judge(
        toy_base_dir, examples[:16], tmp_path, s, val=examples[16:], reward_funcs=[length_reward]
    )
    w = load_file(f"{r['dir']}/adapter_model.safetensors")
    lora_b = [v for k, v in w.items() if "lora_B" in k]
    assert lora_b and any(float(v.abs().max()) > 0 for v in lora_b)  # lora_B starts at exactly 0
    assert [c["step"] for c in r["val_curve"]] == [0, 1, 2]  # in GRPO steps, not TRL's updates
    assert r["steps"] == 2 and r["batches"]["max_steps"] == 4
    assert any("reward" in h for h in r["log_history"])
    # the trainer is freed when training returns (its validation callback held it in a cycle: review C6)
    import gc

    from trl import GRPOTrainer

    assert not [o for o in gc.get_objects() if isinstance(o, GRPOTrainer)]


def test_sampling_a_master_weight_model_under_autocast_keeps_a_half_cache(toy_base_dir, monkeypatch):
    """GRPO's sampling and validation run the trainer's fp32 master weights: on a GPU under
    autocast with the KV cache in the half type (models.sampling_half), not an fp32 cache (review
    C3). Checked on the CPU with bf16, the same mechanism."""
    import torch

    from stepwiser_lib.engines import decoding, models

    model, tok = models.load_model(toy_base_dir)
    seen = []
    grow = decoding._grow_layer_class

    def spy():
        cls = grow()

        class Spy(cls):
            def set(self, keys, values):
                seen.append((keys.dtype, values.dtype))
                super().set(keys, values)

        return Spy

    monkeypatch.setattr(decoding, "_grow_layer_class", spy)
    seqs = [tok("x = 1", add_special_tokens=False)["input_ids"]] * 2
    rows = decoding.sample(
        model, seqs, 2, max_new_tokens=4, temperature=0.0, eos=[tok.eos_token_id], half=torch.bfloat16
    )
    assert all(len(r.tokens) >= 1 for s in rows for r in s)
    assert seen and set(seen) == {(torch.bfloat16, torch.bfloat16)}
    assert models.sampling_half(model) is None  # fp32 on the CPU: sampled as it is


def test_grpo_verdict_loss_and_balanced_steps_run(toy_base_dir, examples, tmp_path):
    """The toy-scale options of notebook 04 go through TRL: a verdict-only loss mask (here no
    sample writes a verdict, so every token stays in the loss) and balanced steps."""
    s = GRPOSettings(
        steps=2,
        prompts_per_step=2,
        group_size=4,
        max_completion=16,
        eval_every=0,
        loss_tokens="verdict",
        balanced_steps=True,
    )
    r = judge_train.train_grpo_judge(toy_base_dir, examples[:16], tmp_path, s, val=examples[16:20], progress=False)
    assert r["steps"] == 2 and any("reward" in h for h in r["log_history"])
    assert r["val_curve"] == []  # eval_every 0 draws no curve, not even step 0 (toy-full's time cut)


def test_judge_inference_api(toy_base_dir, examples):
    j = judge.Judge.load(toy_base_dir, max_new_tokens=24)
    triples = [(e["problem"], e["history"], e["chunk"]) for e in examples[:4]]
    one = j.judge(triples)
    assert len(one) == 4 and all(set(x) == {"verdict", "analysis", "score", "n_unparsed"} for x in one)
    assert j.judge(triples) == one  # greedy is deterministic
    maj = j.judge(triples, k=3, seed=1)
    assert all(0.0 <= x["score"] <= 1.0 and x["n_unparsed"] <= 3 for x in maj)
    kept = j.judge(triples, k=3, seed=1, samples=True)  # every sample kept (issue 59's exploration)
    assert [{k: v for k, v in x.items() if k != "samples"} for x in kept] == maj
    assert all(len(x["samples"]) == 3 and x["samples"][0] == x["analysis"] for x in kept)


def test_verdict_readout_on_literal_outputs(toy_base_dir, examples):
    """verdict_probs reads p(Positive) after the last box of any output (None without a box);
    verdict_readout adds it to each record and reports AUCs of it against labels and against
    the verdict each analysis implies."""
    j = judge.Judge.load(toy_base_dir, max_new_tokens=24)
    ex = examples[:4]
    triples = [(e["problem"], e["history"], e["chunk"]) for e in ex]
    outs = [
        "check b: b = 5; stated 5; 5 - 5 = 0\n\\boxed{Positive}",
        "check b: b = 5; stated 6; 6 - 5 = 1\n\\boxed{Negative}",
        "no box here",
        "check c: c = 7; stated 7; 7 - 7 = 0\n\\boxed{",
    ]
    p = j.verdict_probs(triples, outs)
    assert p[2] is None and all(0.0 <= x <= 1.0 for x in (p[0], p[1], p[3]))
    judged = [{"verdict": judge.parse_verdict(o), "analysis": o} for o in outs]
    labelled = [{**e, "label": lab} for e, lab in zip(ex, (True, False, True, False))]
    r = judge.verdict_readout(j, labelled, judged)
    assert [x["p_positive"] for x in judged] == p
    # three outputs with a box: two imply right (labels True, False), one implies wrong (False)
    assert r["analysis_faithful"] == round(100 * 2 / 3, 2)
    assert r["readout_auc"] == judge.score_auc([p[0], p[1], p[3]], [True, False, True])
    assert r["verdict_prob_auc"] == judge.score_auc([p[0], p[1], p[3]], [True, False, False])
    assert r["p_pos_if_analysis_wrong"] == round(p[1], 4)


def test_group_runs_reads_trl_group_layout():
    assert judge_train.group_runs([[1, 2]] * 3 + [[3]] * 3) == ([[1, 2], [3]], 3)
    assert judge_train.group_runs([[1], [2], [3]]) == ([[1], [2], [3]], 1)
    assert judge_train.group_runs([[1], [1], [2]]) is None  # uneven groups: TRL's own path
    assert judge_train.group_runs([[1], [1], [2], [3]]) is None
    assert judge_train.group_runs([]) is None


def test_group_seeds_depend_on_the_group_not_on_its_neighbours():
    """Issue 34: a GRPO group's seed is fixed by the run's seed, the step and its prompt, so a
    group split off to another process (fewer neighbours) keeps its stream; a repeated prompt in
    one batch gets a stream of its own."""
    both = judge_train.group_seeds(0, 5, [[1, 2], [3]])
    assert judge_train.group_seeds(0, 5, [[3]]) == both[1:] and judge_train.group_seeds(0, 5, [[1, 2]]) == both[:1]
    assert both[0] == int(judge_train.io.digest("grpo group", 0, 5, [1, 2], 0), 16) % 2**63
    assert judge_train.group_seeds(0, 6, [[1, 2]]) != both[:1] and judge_train.group_seeds(1, 5, [[1, 2]]) != both[:1]
    twice = judge_train.group_seeds(0, 5, [[1, 2], [1, 2]])
    assert twice[0] == both[0] and twice[1] != twice[0]
    assert all(0 <= x < 2**63 for x in both + twice)


def test_a_reward_by_name_for_launched_runs():
    assert judge_train.reward_function("stepwiser_lib.method.judge_train:verdict_reward") is judge_train.verdict_reward
    assert judge_train.reward_function(len) is len
    with pytest.raises(ValueError, match="has no function nope"):
        judge_train.reward_function("stepwiser_lib.method.judge_train:nope")
    with pytest.raises(ValueError, match="'module:function'"):
        judge_train.reward_function("verdict_reward")


def _grpo_trainer(toy_base_dir, examples, tmp_path, temperature):
    import torch
    from transformers import AutoModelForCausalLM

    from stepwiser_lib.engines import models

    tok = models.load_tokenizer(toy_base_dir)
    model = AutoModelForCausalLM.from_pretrained(toy_base_dir, dtype=torch.float32)
    models.neutral_generation_config(model, tok)
    s = GRPOSettings(steps=1, prompts_per_step=2, group_size=4, max_completion=40, temperature=temperature)
    cls = judge_train.verdict_loss_trainer(tok)
    return cls(
        model=model,
        reward_funcs=[judge.verdict_reward],
        args=s.grpo_args(tmp_path, 1, progress=False),
        train_dataset=judge_train.grpo_dataset(examples[:8]),
        processing_class=tok,
        peft_config=models.lora_config(4, 8),
    ), tok


def test_grpo_groups_are_sampled_by_the_loop_as_trl_would(toy_base_dir, examples, tmp_path, monkeypatch):
    """The seam with TRL: our trainer's ``_generate_single_turn`` goes through
    stepwiser_lib.engines.decoding and returns what TRL's own ``model.generate`` path returns (near-greedy
    temperature, so both take the argmax): completion ids up to and including the first end token."""
    from trl import GRPOTrainer

    from stepwiser_lib.engines import decoding, models

    trainer, tok = _grpo_trainer(toy_base_dir, examples, tmp_path, temperature=1e-4)
    prompts = [
        tok(models.render_prompt(tok, judge.judge_prompt_of(e), True), add_special_tokens=False)["input_ids"]
        for e in examples[:3]
    ]
    ids = [p for p in prompts for _ in range(4)]  # TRL's RepeatSampler layout
    calls = []
    real = decoding.sample
    monkeypatch.setattr(decoding, "sample", lambda *a, **k: calls.append(k) or real(*a, **k))
    ours, lp = trainer._generate_single_turn(ids, None, {}, 4)
    assert len(calls) == 1 and calls[0]["max_new_tokens"] == 40 and calls[0]["eos"] == list(trainer.eos_token_ids)
    theirs, _ = GRPOTrainer._generate_single_turn(trainer, ids, None, {}, 4)
    assert lp is None and ours == theirs
    assert all(len(c) <= 40 for c in ours)


def test_sampling_copy_of_a_lora_model_has_its_logits(toy_base_dir):
    import torch
    from peft import get_peft_model

    from stepwiser_lib.engines import models

    model, tok = models.load_model(toy_base_dir)
    pm = get_peft_model(model, models.lora_config(4, 8))
    with torch.no_grad():
        for n, p in pm.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.05)
    before = {n: p.clone() for n, p in pm.named_parameters()}
    merged = models.for_sampling(pm)
    x = torch.tensor([tok("a = 3 + 4", add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        assert torch.allclose(merged(input_ids=x).logits, pm(input_ids=x).logits, atol=1e-4)
    assert all(torch.equal(p, before[n]) for n, p in pm.named_parameters())  # the trained model is untouched
    assert models.for_sampling(model) is model is not merged  # a plain model is sampled as it is


def test_the_sampling_copy_samples_with_its_own_weights_under_trls_fused_head(toy_base_dir):
    """TRL's GRPOTrainer swaps in an instance ``forward`` (its fused LM head) that closes over the
    original model. The merged copy must not keep it: it ran every decode step through the
    unmerged LoRA model (issue 61). Checked by changing the original after the copy."""
    import torch
    from peft import get_peft_model
    from trl.trainer.utils import add_fused_lm_head

    from stepwiser_lib.engines import models

    model, tok = models.load_model(toy_base_dir)
    add_fused_lm_head(model)
    pm = get_peft_model(model, models.lora_config(4, 8))
    merged = models.for_sampling(pm)
    x = torch.tensor([tok("a = 3 + 4", add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        before = merged(input_ids=x).logits.clone()
        for n, p in pm.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.5)
        assert torch.equal(merged(input_ids=x).logits, before)  # the copy's own weights, not the live model's
        assert not torch.allclose(pm(input_ids=x).logits, before, atol=1e-3)
    assert not any("lora" in n for n, _ in merged.named_modules())


def _fused_lora(toy_base_dir, temperature):
    import torch
    from peft import get_peft_model
    from trl.trainer.utils import add_fused_lm_head

    from stepwiser_lib.engines import models

    model, _ = models.load_model(toy_base_dir)
    add_fused_lm_head(model, temperature=temperature, outputs=("log_probs", "entropy"))
    pm = get_peft_model(model, models.lora_config(4, 8))
    torch.manual_seed(0)
    with torch.no_grad():
        for n, p in pm.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.05)
    return pm


@pytest.mark.parametrize("bands", [1, 3])
def test_shared_prompt_passes_give_trls_log_probs_and_gradients(toy_base_dir, monkeypatch, bands):
    """The seam with TRL's log-probability pass (issue 61): each distinct prompt run once, its
    cache repeated for its completions, in shuffled row order (TRL shuffles before the loss),
    left-padded prompts of unequal length and right-padded completions in length bands: the same
    log-probabilities, entropies and LoRA gradients as TRL's own pass over prompt + completion."""
    import torch

    monkeypatch.setattr(judge_train, "LENGTH_BANDS", bands)
    pm = _fused_lora(toy_base_dir, temperature=0.7)
    g = torch.Generator().manual_seed(1)
    n, groups, p, c = 4, 3, 20, 12
    heads = torch.randint(2, 400, (groups, p), generator=g)
    head_mask = torch.ones(groups, p, dtype=torch.long)
    head_mask[0, :5] = 0  # left padding
    head_mask[1, :2] = 0
    ids = torch.cat([heads.repeat_interleave(n, 0), torch.randint(2, 400, (groups * n, c), generator=g)], 1)
    mask = torch.cat([head_mask.repeat_interleave(n, 0), torch.ones(groups * n, c, dtype=torch.long)], 1)
    for row, length in enumerate([12, 3, 7, 12, 1, 9, 5, 12, 2, 11, 6, 4]):
        mask[row, p + length :] = 0  # right padding after the end
    perm = torch.randperm(groups * n, generator=g)
    ids, mask = ids[perm], mask[perm]
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, :-c] = -100
    out = pm(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
    theirs, their_ent = out.log_probs[:, -c:], out.entropy[:, -c:]
    ours, our_ent = judge_train.shared_prompt_logps(pm, ids, mask, c, 0.7, True)
    keep = mask[:, -c:].bool()
    assert ours.shape == theirs.shape and torch.allclose(ours[keep], theirs[keep], atol=1e-5)
    assert torch.allclose(our_ent[keep], their_ent[keep], atol=1e-5)
    params = [q for q in pm.parameters() if q.requires_grad]
    g_theirs = torch.autograd.grad((theirs * keep).sum(), params)
    g_ours = torch.autograd.grad((ours * keep).sum(), params)
    assert all(torch.allclose(a, b, rtol=1e-4, atol=1e-3) for a, b in zip(g_ours, g_theirs))


def test_shared_prompt_pass_refuses_a_model_that_keeps_no_cache(toy_base_dir):
    """Gradient checkpointing turns the cache off in training: the completions would run without
    their prompt, so the pass stops instead of returning wrong log-probabilities (the trainer
    sends such a model to TRL's pass before it gets here)."""
    import torch

    pm = _fused_lora(toy_base_dir, temperature=1.0)
    pm.gradient_checkpointing_enable()
    pm.train()
    ids = torch.randint(2, 400, (4, 10))
    with pytest.raises(RuntimeError, match="cached 0 of 6 positions"):
        judge_train.shared_prompt_logps(pm, ids, torch.ones_like(ids), 4, 1.0, False)


@pytest.mark.parametrize("shared", [True, False])
def test_grpo_trainer_runs_its_log_prob_passes_per_prompt(toy_base_dir, examples, tmp_path, monkeypatch, shared):
    """One GRPO step through our trainer uses the shared-prompt pass for both the reference and the
    loss (the loss's rows come shuffled), and TRL's own pass when it is switched off."""
    monkeypatch.setattr(judge_train, "SHARE_PROMPT_PASSES", shared)
    trainer, _ = _grpo_trainer(toy_base_dir, examples, tmp_path, temperature=1.0)
    trainer.train()
    assert trainer._shared_prompt_passes == (2 if shared else 0)  # the KL reference's and the loss's


KILLED_GRPO = """
import os, signal, sys
sys.path.insert(0, "tests")
import transformers
from stepwiser_lib.engines.trainers import GRPOSettings
from stepwiser_lib.method import judge_train
from test_judge_training import RESUME_SETTINGS, length_reward, make_examples

save = transformers.Trainer._save_checkpoint

def save_then_die(self, *a, **kw):  # a real SIGKILL, right after the checkpoint at GRPO step 2 is whole
    save(self, *a, **kw)
    if self.state.global_step == 2:
        os.kill(os.getpid(), signal.SIGKILL)

transformers.Trainer._save_checkpoint = save_then_die
ex = make_examples()
judge_train.train_grpo_judge(sys.argv[1], ex[:16], sys.argv[2], GRPOSettings(**RESUME_SETTINGS), val=ex[16:20],
                             reward_funcs=[length_reward], progress=False)
"""
RESUME_SETTINGS = dict(
    steps=4, prompts_per_step=2, group_size=4, max_completion=16, eval_every=1, temperature=1.5, save_every=1
)


def length_reward(completions, **kw):
    return [len(c[-1]["content"] if isinstance(c, list) else c) / 50 for c in completions]


def make_examples():
    rng = random.Random(0)
    out = []
    for p in tw.generate_problems("label", 24, seed=11):
        hist, step, _ = tw.check_example(p, rng)
        out.append(
            {"problem": p.text, "history": [hist] if hist else [], "chunk": step, "label": tw.check_step(p, step).ok}
        )
    return out


def test_a_killed_grpo_run_resumes_from_its_checkpoint_to_the_same_weights(toy_base_dir, tmp_path):
    """Issue 34: SAVE_EVERY checkpoints; a run SIGKILLed after its step-2 checkpoint, then run
    again, resumes there and ends with the weights and the validation curve of a run never stopped
    (the groups' random streams follow the optimizer step, the trainer restores the rest)."""
    import subprocess
    import sys

    import torch
    from safetensors.torch import load_file

    ex = make_examples()
    s = GRPOSettings(**RESUME_SETTINGS)
    whole = judge_train.train_grpo_judge(
        toy_base_dir, ex[:16], tmp_path / "whole", s, val=ex[16:20], reward_funcs=[length_reward], progress=False
    )
    script = tmp_path / "killed.py"
    script.write_text(KILLED_GRPO)
    run = tmp_path / "run"
    p = subprocess.run([sys.executable, str(script), toy_base_dir, str(run)], cwd=judge_train.paths.ROOT, timeout=600)
    assert p.returncode == -9  # killed, after its checkpoint
    assert sorted(c.name for c in (run / "trainer").glob("*/checkpoint-*")) == ["checkpoint-1", "checkpoint-2"]
    resumed = judge_train.train_grpo_judge(
        toy_base_dir, ex[:16], run, s, val=ex[16:20], reward_funcs=[length_reward], progress=False
    )
    assert resumed["resumed_from"] == "checkpoint-2" and whole["resumed_from"] is None
    a, b = (
        load_file(f"{whole['dir']}/adapter_model.safetensors"),
        load_file(f"{resumed['dir']}/adapter_model.safetensors"),
    )
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert [c["step"] for c in resumed["val_curve"]] == [0, 1, 2, 3, 4] and resumed["val_curve"] == whole["val_curve"]
    assert not list((run / "trainer").glob("*/checkpoint-*"))  # dropped once the model is saved


KILLED_SFT = """
import os, signal, sys
sys.path.insert(0, "tests")
import transformers
from stepwiser_lib.engines.sft import sft
from stepwiser_lib.engines.trainers import SFTSettings
from test_judge_training import SFT_SETTINGS, sft_records

save = transformers.Trainer._save_checkpoint

def save_then_die(self, *a, **kw):
    save(self, *a, **kw)
    if self.state.global_step == 2:
        os.kill(os.getpid(), signal.SIGKILL)

transformers.Trainer._save_checkpoint = save_then_die
sft(sys.argv[1], sft_records(), sys.argv[2], SFTSettings(**SFT_SETTINGS), progress=False)
"""
SFT_SETTINGS = dict(max_steps=4, global_batch=4, lr=1e-3, save_every=1, max_length=128)


def sft_records():
    return [{"prompt": f"What is {a} + {a}?", "completion": f"{a} + {a} = {2 * a}."} for a in range(16)]


def test_a_killed_sft_run_resumes_from_its_checkpoint_to_the_same_weights(toy_base_dir, tmp_path):
    """Issue 34, the SFT trainer (chunk policy, warm-up, discriminative and RS-FT judges, 07)."""
    import subprocess
    import sys

    import torch
    from safetensors.torch import load_file

    from stepwiser_lib.engines.sft import sft
    from stepwiser_lib.engines.trainers import SFTSettings

    whole = sft(toy_base_dir, sft_records(), tmp_path / "whole", SFTSettings(**SFT_SETTINGS), progress=False)
    script = tmp_path / "killed.py"
    script.write_text(KILLED_SFT)
    run = tmp_path / "run"
    p = subprocess.run([sys.executable, str(script), toy_base_dir, str(run)], cwd=judge_train.paths.ROOT, timeout=600)
    assert p.returncode == -9
    resumed = sft(toy_base_dir, sft_records(), run, SFTSettings(**SFT_SETTINGS), progress=False)
    assert resumed["resumed_from"] == "checkpoint-2" and resumed["steps"] == whole["steps"] == 4
    a = load_file(f"{whole['model_dir']}/model.safetensors")
    b = load_file(f"{resumed['model_dir']}/model.safetensors")
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert resumed["loss_curve"] == whole["loss_curve"]
