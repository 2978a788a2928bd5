"""Stage 1: self-segmentation into chunks-of-thought (paper §3.1, §4.1, Tables 1, 4, 11).

Pipeline (notebook ``01_self_segmentation``):

1. sample responses from the base policy and keep at most ``max_per_problem`` correct ones per
   prompt (paper: 16 samples, at most 4 correct);
2. segment each with a teacher: the rule teacher of the toy world
   (:func:`stepwiser_lib.toy.toyworld.teacher_segment`) or an instruct LLM prompted with the paper's
   Table 1 rules (:func:`llm_teacher`, paper: Llama-3.1-70B-it, 8 segmentations per response);
3. keep a segmentation only if it follows the format and removing the tags reconstructs the
   response exactly (:func:`segmentation_problems`);
4. SFT the base policy on (chunk-policy prompt, segmented response) with TRL's ``SFTTrainer``
   (:func:`sft_chunk_policy`), which gives the chunk policy every later stage starts from.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..core import io, prompts
from ..core.chunks import (
    CHUNK_CLOSE,
    CHUNK_OPEN,
    CHUNK_RE,
    paragraph_chunks,
    parse_chunks,
    split_paragraphs,
    strip_tags,
)
from ..engines.sft import sft
from ..evals.evaluation import compare_rates, rate_ci
from ..evals.paper_results import TABLE4
from . import sampling, tasks


def sample_base(
    generator,
    items: list[dict],
    template: str,
    out: str | Path,
    *,
    n: int,
    temperature: float,
    max_new_tokens: int,
    seed: int,
    references: bool = False,
) -> tuple[list[dict], dict]:
    """Step 1: ``n`` responses per prompt from the base policy (records of
    :func:`~stepwiser_lib.method.sampling.sample_solutions`), plus each prompt's reference solution
    when ``references`` (colab-smoke's shortcut, :func:`~stepwiser_lib.method.sampling.reference_samples`),
    written to ``out`` (``samples.jsonl``). Returns the records and what :func:`sample_lines` prints:
    the output rates of the model's own samples, the seconds taken (writing included), how many
    prompts have a correct sample."""
    t = time.time()
    samples = sampling.sample_solutions(
        generator, items, template, n, temperature, max_new_tokens, seed=seed, progress="base samples"
    )
    if references:
        samples += sampling.reference_samples(items, chunked=False)
    io.write_jsonl(out, samples)
    info = {
        "seconds": time.time() - t,
        "rates": sampling.record_rates(samples),  # the model's own samples (a shortcut's references left out)
        "prompts": len(items),
        "solved": len({r["problem_id"] for r in samples if r["correct"]}),
        "references": len(items) if references else 0,
    }
    return samples, info


def sample_lines(info: dict) -> list[str]:
    """What notebook 01 prints under its base-policy samples (:func:`sample_base`'s ``info``)."""
    lines = [f"{sampling.rates_line(info['rates'], 'base-policy samples')} ({info['seconds']:.0f} s)"]
    if info["references"]:
        lines.append(
            f"+ {info['references']} reference solutions [shortcut: REFERENCE_SAMPLES], "
            "so that the later stages get correct text"
        )
    return lines + [
        f"{info['solved']}/{info['prompts']} prompts have a correct sample (section 2 prints one sample, raw and segmented)"
    ]


def segmentation_problems(original: str, segmented: str) -> list[str]:
    """Why a teacher's segmentation is rejected (empty list = accepted), paper §3.2 step 5.

    Format (Table 1): only ``<chunk>...</chunk>`` units, nothing outside them but the blank-line
    separators that were in the text, no nesting, no empty chunk. Content: removing the tags
    gives back the original response byte for byte.
    """
    errs = []
    outside = CHUNK_RE.sub("", segmented)
    if outside.strip():
        errs.append(f"text outside chunks: {outside.strip()[:40]!r}")
    units = CHUNK_RE.findall(segmented)
    if not units:
        errs.append("no chunk")
    if any(CHUNK_OPEN in u or CHUNK_CLOSE in u for u in units):
        errs.append("nested or unbalanced chunk tags")
    if segmented.count(CHUNK_OPEN) != segmented.count(CHUNK_CLOSE):
        errs.append("unbalanced chunk tags")
    if any(not u.strip() for u in units):
        errs.append("empty chunk")
    if strip_tags(segmented) != original:
        errs.append("does not reconstruct the original text")
    return errs


def reconstructs(original: str, segmented: str) -> bool:
    return not segmentation_problems(original, segmented)


#: Teachers that need no model: the toy world's rule teacher and the paragraph teacher (the paper's
#: "split by \\n\\n" steps, tagged: a teacher for any text). Any other TEACHER names an instruct LLM.
TEXT_TEACHERS = ("rule", "paragraphs")


def text_teacher(name: str, task: str) -> Callable[[list[str]], list[str | None]]:
    """A teacher of :data:`TEXT_TEACHERS`: responses -> their tagged segmentations."""
    if name == "rule":
        if task != "toy":
            raise ValueError("the rule teacher only knows the toy world; set TEACHER to an instruct LLM")
        return lambda responses: [tasks.rule_segment(r) for r in responses]
    if name == "paragraphs":
        return lambda responses: [paragraph_chunks(r) for r in responses]
    raise ValueError(f"{name!r} is not a text teacher ({', '.join(TEXT_TEACHERS)}); an LLM teacher is llm_teacher's")


def llm_teacher(
    generator, n_segmentations: int = 8, temperature: float = 0.7, max_new_tokens: int = 4096, seed: int = 0
) -> Callable[[list[str]], list[str | None]]:
    """A segmentation teacher backed by an instruct LLM with the paper's Table 1 rules.

    Returns a function mapping responses to their first valid segmentation among
    ``n_segmentations`` samples (paper: 8), or None when none reconstructs the response.
    """

    def segment(responses: list[str]) -> list[str | None]:
        ps = [prompts.PAPER_SEGMENTATION_TEACHER.format(solution=r) for r in responses]
        outs = generator.generate(
            ps, n=n_segmentations, temperature=temperature, max_new_tokens=max_new_tokens, seed=seed, progress="teacher"
        )
        res: list[str | None] = []
        for r, cands in zip(responses, outs):
            ok = [c.text.strip() for c in cands if reconstructs(r, c.text.strip())]
            res.append(ok[0] if ok else None)
        return res

    return segment


@dataclass
class SegmentationStats:
    sampled: int
    correct: int
    kept: int  # after the per-prompt cap
    accepted: int  # after the reconstruction filter
    rejected_reasons: dict


def build_sft_records(
    items: list[dict],
    teacher: Callable[[list[str]], list[str | None]],
    max_per_problem: int,
    policy_prompt: str,
    seed: int = 0,
) -> tuple[list[dict], SegmentationStats]:
    """SFT records from sampled responses.

    ``items``: ``{"problem_id", "problem", "response", "correct"}`` dicts. Keeps at most
    ``max_per_problem`` correct responses per problem (random, seeded), segments them, filters by
    exact reconstruction. Records: ``{"problem_id", "prompt", "completion", "raw"}`` with the
    chunk-policy prompt (Table 11 or its toy version) and the segmented response.
    """
    rng = random.Random(seed)
    by_pid: dict[str, list[dict]] = {}
    for it in items:
        if it["correct"]:
            by_pid.setdefault(it["problem_id"], []).append(it)
    kept = []
    for pid in sorted(by_pid):
        xs = by_pid[pid]
        # identical responses add nothing: keep distinct texts first
        seen, uniq = set(), []
        for x in xs:
            if x["response"] not in seen:
                seen.add(x["response"])
                uniq.append(x)
        rng.shuffle(uniq)
        kept.extend(uniq[:max_per_problem])
    segs = teacher([k["response"] for k in kept])
    records, reasons = [], {}
    for k, s in zip(kept, segs):
        errs = ["teacher gave no valid segmentation"] if s is None else segmentation_problems(k["response"], s)
        if errs:
            for e in errs:
                reasons[e.split(":")[0]] = reasons.get(e.split(":")[0], 0) + 1
            continue
        records.append(
            {
                "problem_id": k["problem_id"],
                "prompt": policy_prompt.format(problem=k["problem"]),
                "completion": s,
                "raw": k["response"],
            }
        )
    stats = SegmentationStats(
        sampled=len(items),
        correct=sum(bool(i["correct"]) for i in items),
        kept=len(kept),
        accepted=len(records),
        rejected_reasons=reasons,
    )
    return records, stats


def teacher_budget(max_new_tokens: int) -> int:
    """New tokens a teacher needs to copy a response of up to ``max_new_tokens`` with its tags:
    a fixed 4,096 cut every solution longer than that at paper scale (8,192), so long solutions
    were never segmented and the SFT set leaned to short ones. A quarter more, plus room for
    the tags of a few dozen chunks (4 tokens each)."""
    return int(1.25 * max_new_tokens) + 256


def _engines():
    """The engine factory and its release (:mod:`stepwiser_lib.engines.models`), imported on first use."""
    from ..engines.models import make_generator, release  # lazy: torch

    return make_generator, release


def segment_samples(
    samples: list[dict],
    teacher: str,
    task: str,
    max_per_problem: int,
    policy_prompt: str,
    seed: int,
    *,
    max_new_tokens: int,
    n_segmentations: int = 8,
    backend: str = "hf",
    batch_size: int = 128,
    engine: dict | None = None,
    free=(),
) -> tuple[list[dict], SegmentationStats]:
    """Steps 2 and 3: :func:`build_sft_records` with the teacher that ``teacher`` names. A name of
    :data:`TEXT_TEACHERS` needs no model (:func:`text_teacher`); any other is an instruct LLM
    (:func:`llm_teacher`, ``n_segmentations`` tries per response, :func:`teacher_budget` new
    tokens): one engine at a time on a GPU, so the engines in ``free`` (the base policy) are
    released before the teacher's is made, and the teacher's is released before this returns."""
    if teacher in TEXT_TEACHERS:  # the toy rule teacher, or "split by \\n\\n" paragraphs
        return build_sft_records(samples, text_teacher(teacher, task), max_per_problem, policy_prompt, seed=seed)
    make_generator, release = _engines()
    release(*free)
    gen = make_generator(teacher, backend=backend, batch_size=batch_size, **(engine or {}))
    try:
        segment = llm_teacher(
            gen, n_segmentations=n_segmentations, seed=seed, max_new_tokens=teacher_budget(max_new_tokens)
        )
        return build_sft_records(samples, segment, max_per_problem, policy_prompt, seed=seed)
    finally:
        release(gen)


def changed_example(records: list[dict], first: int = 50) -> list[str]:
    """Notebook 01's worked example, picked by a stated rule, as Markdown lines: how many of the
    ``first`` records the teacher segmented differently from their blank-line paragraphs, and the
    first of them (else the first record) side by side, a row per step: its paragraphs (the
    "split by \\n\\n" steps) beside the teacher's chunks (each wrapped in ``<chunk>`` tags in the
    SFT target)."""
    head = records[:first]
    changed = [r for r in head if parse_chunks(r["completion"]) != split_paragraphs(r["raw"])]
    ex = changed[0] if changed else (records[0] if records else None)
    lines = [
        f"{len(changed)} of the first {len(head)} records are segmented differently from their paragraphs; the first:"
    ]
    if ex:
        paras, chunks = split_paragraphs(ex["raw"]), parse_chunks(ex["completion"])
        lines += [
            "",
            f"| # | split by blank lines: {len(paras)} steps | the teacher's chunks: {len(chunks)} |",
            "|---|---|---|",
        ]
        lines += [
            f"| {i} | {_md_cell(paras[i] if i < len(paras) else '')} | {_md_cell(chunks[i] if i < len(chunks) else '')} |"
            for i in range(max(len(paras), len(chunks)))
        ]
    return lines


def _md_cell(text: str) -> str:
    """``text`` as one Markdown table cell, shown as written: its line breaks as ``<br>``, and the
    characters Markdown (and a notebook's maths) would read as markup (``* _ | < $ \\``) escaped."""
    for ch in "\\*_|<$":
        text = text.replace(ch, "\\" + ch)
    return text.replace("\n", "<br>")


#: Where the embeddings of chunk tags the base never read start (``TAG_INIT``): ``random`` (as the
#: tokenizer left them) or ``separator`` (:func:`init_tag_embeddings`). [not in paper]
TAG_INITS = ("random", "separator")


def init_tag_embeddings(model, tok, like: str = "\n", noise: float = 0.1, seed: int = 0) -> dict:
    """Start each chunk tag that is a token of its own from the embedding of ``like`` (the token
    the blank-line separator is made of), plus seeded noise of ``noise`` times that row's norm so
    that the two tags differ. [not in paper: a real BPE splits the tags into pieces it was trained
    on, and nothing changes; the toy tokenizer has them as added tokens the toy base never read,
    whose rows stay at their random start, about twice a trained row's norm]

    Input and output rows both (they are one matrix when tied). Returns, per tag changed, its row
    norm before and after."""
    import torch

    src = tok.encode(like, add_special_tokens=False)
    if len(src) != 1:
        raise ValueError(f"{like!r} is {len(src)} tokens in this tokenizer; tag rows copy one token's row")
    mats = [model.get_input_embeddings().weight]
    out_emb = model.get_output_embeddings()
    if out_emb is not None and out_emb.weight.data_ptr() != mats[0].data_ptr():
        mats.append(out_emb.weight)
    g = torch.Generator().manual_seed(seed)
    changed = {}
    with torch.no_grad():
        for tag in (CHUNK_OPEN, CHUNK_CLOSE):
            ids = tok.encode(tag, add_special_tokens=False)
            if len(ids) != 1:
                continue
            before = round(float(mats[0][ids[0]].norm()), 3)
            for w in mats:
                row = w[src[0]].clone()
                w[ids[0]] = (
                    row + noise * row.norm() * torch.randn(row.shape, generator=g, dtype=row.dtype) / row.numel() ** 0.5
                )
            changed[tag] = {"norm_before": before, "norm_after": round(float(mats[0][ids[0]].norm()), 3)}
    return changed


def sft_chunk_policy(
    base_model: str, records: list[dict], out_dir: str | Path, settings, tag_init: str = "random"
) -> dict:
    """SFT the base policy on chunked responses (paper §3.3 recipe: lr 1e-5, global batch 32,
    packing 8192 at paper scale) with TRL's ``SFTTrainer``; see :func:`stepwiser_lib.engines.sft.sft`.
    ``tag_init`` (:data:`TAG_INITS`): ``separator`` first writes a copy of the base with
    :func:`init_tag_embeddings` to ``out_dir/start`` and fine-tunes that; the result records
    ``tag_init`` and the row norms it changed."""
    if not records:
        raise ValueError(
            "no SFT records: the base policy produced no correct, segmentable response "
            "(sample more prompts or responses)"
        )
    if tag_init not in TAG_INITS:
        raise ValueError(f"TAG_INIT must be one of {TAG_INITS}, not {tag_init!r}")
    changed = {}
    if tag_init == "separator":
        from ..engines.models import load_model, save_atomically  # lazy: torch

        model, tok = load_model(base_model)
        changed = init_tag_embeddings(model, tok, seed=getattr(settings, "seed", 0))
        start = Path(out_dir) / "start"
        save_atomically(model, tok, start)
        base_model = str(start)
    return {**sft(base_model, records, out_dir, settings), "tag_init": tag_init, "tag_rows": changed}


def sample_policy(
    model: str,
    items: list[dict],
    template: str,
    *,
    n: int,
    temperature: float,
    max_new_tokens: int,
    seed: int,
    backend: str = "hf",
    batch_size: int = 128,
    engine: dict | None = None,
    progress: str | bool = False,
) -> list[dict]:
    """``n`` responses per held-out prompt from the policy at ``model``
    (:func:`~stepwiser_lib.method.sampling.sample_solutions`), its engine made here and released
    before this returns: one engine at a time on a GPU."""
    make_generator, release = _engines()
    gen = make_generator(model, backend=backend, batch_size=batch_size, **(engine or {}))
    try:
        return sampling.sample_solutions(
            gen, items, template, n, temperature, max_new_tokens, seed=seed, progress=progress
        )
    finally:
        release(gen)


def sft_repeats(
    base_model: str,
    records: list[dict],
    art: str | Path,
    settings,
    seeds: list[int],
    items: list[dict],
    template: str,
    task: str,
    *,
    skip: int | None = None,
    report: Callable[[str], None] = print,
    **sample_kw,
) -> dict[str, list[dict]]:
    """Table 4's chunk arm at more SFT seeds (``SFT_REPEAT_SEEDS``; ``skip``: the seed already
    trained): for each, :func:`sft_chunk_policy` with that seed into ``art/chunk_policy_seed<s>``,
    then :func:`sample_policy` on ``items`` with ``sample_kw`` (the SEED policy's sampling), and
    ``report`` of its Avg@k. Returns the per-solution predictions by method (``chunk@seed<s>``),
    which the claims table resamples."""
    preds = {}
    for s in seeds:
        if s == skip:
            continue
        r = sft_chunk_policy(base_model, records, Path(art) / f"chunk_policy_seed{s}", settings.with_(seed=s))
        ev = sample_policy(r["model_dir"], items, template, progress=f"eval chunk seed {s}", **sample_kw)
        name = f"chunk@seed{s}"
        preds[name] = sampling.solution_predictions(name, task, sample_kw["seed"], ev, chunked=True)
        report(
            f"chunk policy, SFT seed {s}: Avg@{sample_kw['n']} {sampling.summarize(ev, chunked=True)['avg_acc']:.1f}"
        )
    return preds


#: Table 4's two claims, as (claim, field) pairs: the chunk policy writes fewer steps, at the same accuracy.
TABLE4_CLAIMS = [
    ("self-segmentation gives fewer steps per solution", "steps"),
    ("self-segmentation keeps accuracy", "correct"),
]


def table4_comparisons(chunk: list[dict], base: list[dict], n_boot: int = 2000, seed: int = 0) -> list[dict]:
    """Paper Table 4 as paired comparisons of the chunk policy with its base on the same problems
    (records of :func:`stepwiser_lib.method.sampling.solution_predictions`; each problem's samples
    averaged, paired bootstrap by problem): chunk - base in steps per solution, and in Avg@k
    accuracy points."""
    return [
        {"claim": claim, "field": field, **compare_rates(chunk, base, n_boot, seed, field=field)}
        for claim, field in TABLE4_CLAIMS
    ]


def table4(ev_base: list[dict], ev_chunk: list[dict], task: str, seed: int) -> dict:
    """Notebook 01's Table 4 analogue from the two policies' held-out samples (records of
    :func:`stepwiser_lib.method.sampling.sample_solutions`): each policy's summary with a 95%
    interval that resamples problems, the per-solution predictions
    (``results/<profile>/self_segmentation_predictions.jsonl``), the paired claims
    (:func:`table4_comparisons`) and each policy's output rates."""
    out = {"predictions": {}, "rates": {}}
    for name, ev, chunked in (("base", ev_base, False), ("chunk", ev_chunk, True)):
        out[name] = sampling.summarize(ev, chunked=chunked)
        out["predictions"][name] = sampling.solution_predictions(name, task, seed, ev, chunked=chunked)
        out[name]["ci95"] = rate_ci(out["predictions"][name])
        out["rates"][name] = sampling.record_rates(ev)
    out["comparisons"] = table4_comparisons(out["predictions"]["chunk"], out["predictions"]["base"])
    return out


def table4_lines(t4: dict) -> list[str]:
    """What notebook 01 prints under its Table 4 analogue: each policy's output rates (the accuracy
    change, paired, is the closing lines' claim), and a warning when neither policy solved anything."""
    lines = [f"{n} policy: " + sampling.rates_line(r, "held-out samples") for n, r in t4["rates"].items()]
    if t4["base"]["avg_acc"] == t4["chunk"]["avg_acc"] == 0:
        lines.append(
            "Accuracy change from self-segmentation: uninformative (neither policy solved a held-out problem)."
        )
    return lines


def results_markdown(
    name: str,
    profile: str,
    eval_samples: int,
    n_problems: int,
    eval_task: str,
    base: dict,
    chunk: dict,
    comparisons: list[dict],
) -> str:
    """``results/<profile>/self_segmentation.md``: the Table 4 analogue (ours beside the paper's rows)
    and its paired claims (none given: the table alone, as notebook 01 shows it before its closing
    lines)."""
    md = ["| Generator | Method | # Steps | # Tokens | Avg@k acc (%) | 95% interval |", "|---|---|---|---|---|---|"]
    md += [
        f"| {name} {which} ({profile}) | {method} | {s['steps']:.2f} | {s['tokens']:.1f} | {s['avg_acc']:.1f} | "
        f"[{s['ci95']['low']:.1f}, {s['ci95']['high']:.1f}] |"
        for which, method, s in (("base", "Split by \\n\\n", base), ("chunk", "Self-segmentation", chunk))
    ]
    md += [
        f"| {p['generator']} (paper) | {p['method']} | {p['steps']} | {p['tokens']} | {p['avg_acc']} | |"
        for p in TABLE4
    ]
    if comparisons:
        md += ["", "| claim (chunk − base) | difference [95%] | paired test | verdict |", "|---|---|---|---|"]
        md += [
            f"| {c['claim']} | {c['diff']:+.2f} [{c['low']:+.2f}, {c['high']:+.2f}] | {c['test']} | {c['verdict']} |"
            for c in comparisons
        ]
    return (
        f"Table 4 analogue ({profile}): Avg@{eval_samples} on {n_problems} held-out {eval_task} problems; "
        "rows marked (paper) are the paper's numbers.\n\n" + "\n".join(md) + "\n"
    )
