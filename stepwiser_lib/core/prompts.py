"""Every prompt of the companion, in one place, each citing its source.

Two families with the same slots and the same output contracts:
* ``PAPER_*``: the paper's prompts verbatim, used by the ``colab`` and ``paper`` profiles.
* ``TOY_*``: short versions for the tiny toy-world models (a 3M-parameter model cannot read a
  200-word instruction, but it can learn to follow a short one with the same slots).

Use :func:`get` to pick one by family, so notebooks never branch on the profile themselves.
"""

from __future__ import annotations

# ----------------------------------------------------------------------------- policy (Table 11)

#: Paper Table 11, the chunk policy prompt (``\\boxed{{}}`` is a format escape).
PAPER_CHUNK_POLICY = (
    "You are a helpful assistant designed to solve mathematical problems step-by-step. Your task "
    "is to think step-by-step and provide a detailed solution process following a specific "
    "format. You MUST follow the following format:\n"
    "1. Enclose each part of your step-by-step reasoning within <chunk> and </chunk> tags.\n"
    "2. After completing the chain-of-thought reasoning, provide the final answer within "
    "\\boxed{{}}. Ensure strict compliance with this format for every response.\n\n"
    "Problem: {problem}"
)

#: Prompt for sampling the *base* (not yet chunk-tuned) policy in notebook 01. The paper does not
#: give it (§4.1 says only: 16 samples per prompt); a plain step-by-step request with a boxed
#: answer.  # [not in paper]
PAPER_BASE_POLICY = (
    "Solve the following math problem step by step. Put the final answer within \\boxed{{}}.\n\nProblem: {problem}"
)

#: Toy Table 11: same slot, same contract (chunks, then a boxed answer).
TOY_CHUNK_POLICY = "Solve step by step in <chunk> tags, answer in \\boxed{{}}.\nProblem: {problem}"
#: Toy base-policy prompt: what the toy base model was trained on (toybase corpus).
TOY_BASE_POLICY = "Solve.\nProblem: {problem}"

# ----------------------------------------------------------------------------- teacher (Table 1)

#: Paper Table 1 rules, quoted; the wrapper around them is not in the paper.  # [not in paper]
PAPER_SEGMENTATION_TEACHER = (
    "You will be given a step-by-step solution to a math problem. Segment it into chunks.\n\n"
    "Segmentation principles:\n"
    "1. Unified purpose: A chunk should serve a single, clear objective. For example: setting up "
    "an initial equation, executing a self-contained calculation (like integration by parts), or "
    "stating a final/intermediate conclusion. All content within the chunk must directly serve "
    "this one core goal.\n"
    "2. Logical Cohesion: All lines within a chunk must form a continuous and uninterrupted "
    "logical flow. A new chunk should begin as soon as the focus or purpose of the reasoning "
    "shifts.\n"
    "3. Clear Transition: A new chunk must begin when the problem-solving process enters a new "
    'phase. This includes transitioning from "solving for a variable" to "verifying the '
    'answer," or inserting an "explanatory side-note" into the main workflow.\n\n'
    "Format rules:\n"
    "1. Use <chunk>... </chunk> to mark the beginning and end of each segment. The text and "
    "newlines inside the tags must not be altered.\n"
    "2. The final output should only contain the tagged content, without any additional text, "
    "titles, or blank lines.\n"
    "3. You must preserve all original text and newlines exactly as they appear within the "
    "tags.\n\n"
    "Solution:\n{solution}"
)

# ----------------------------------------------------------------------------- judge (Table 3)

#: Paper Table 3, the generative judge prompt, quoted (straight quotes for the PDF's curly ones).
PAPER_JUDGE = (
    "Instruction: You are a reasoning validator for mathematical problems. Your task is to think "
    'step by step and determine if the "New Reasoning Chunk" contains any explicit errors based '
    "on the problem description and historical context. First, you must always perform a "
    "step-by-step chain of thought analysis to justify your final judgment. Then, based on your "
    "analysis, you will make a definitive judgment. It is OK that the chunk does not contain any "
    "numerical calculation. Based on your evaluation, provide your final judgment:\n"
    "- Use Positive if the reasoning chunk is free of mistakes.\n"
    "- Use Negative if the reasoning chunk contains one or more mistakes.\n\n"
    "Input:\nMathematical Problem: {problem}\nHistorical Reasoning Path: {history}\n"
    "New Reasoning Chunk: {chunk}\n\n"
    "Output format:\n"
    "1. Analysis: [Always provide a step-by-step analysis here. First, briefly state the goal of "
    "the current reasoning chunk. Second, verify the logic, method, and any calculations against "
    "the problem's requirements and the historical path. If an error is found, clearly explain "
    "the error and why it's wrong. If the reasoning is correct, explain why it is a valid and "
    "logical step forward.]\n"
    "2. Final Judgment: [Provide the final judgment within \\boxed{{}}. Examples: "
    "\\boxed{{Positive}} or \\boxed{{Negative}}.]"
)

#: Toy Table 3: same three slots, same contract (analysis first, then a boxed verdict).
TOY_JUDGE = (
    "Judge the new chunk: analyse it, then answer \\boxed{{Positive}} or \\boxed{{Negative}}.\n"
    "Problem: {problem}\nHistory: {history}\nNew chunk: {chunk}"
)

#: Judge prompt for the "ablate CoT" judge (paper §4.3, App. A.4: "prompted to answer directly").
#: The paper does not print it; ours is Table 3 with the analysis removed. [not in paper]
PAPER_JUDGE_DIRECT = (
    "Instruction: You are a reasoning validator for mathematical problems. Determine if the "
    '"New Reasoning Chunk" contains any explicit errors based on the problem description and '
    "historical context. Answer directly, without any analysis:\n"
    "- Use Positive if the reasoning chunk is free of mistakes.\n"
    "- Use Negative if the reasoning chunk contains one or more mistakes.\n\n"
    "Input:\nMathematical Problem: {problem}\nHistorical Reasoning Path: {history}\n"
    "New Reasoning Chunk: {chunk}\n\n"
    "Output format: only the final judgment within \\boxed{{}}: \\boxed{{Positive}} or "
    "\\boxed{{Negative}}."
)

#: Toy version of the direct ("no CoT") judge prompt: same slots, verdict only. [not in paper]
TOY_JUDGE_DIRECT = (
    "Judge the new chunk: answer only \\boxed{{Positive}} or \\boxed{{Negative}}.\n"
    "Problem: {problem}\nHistory: {history}\nNew chunk: {chunk}"
)

#: Generic checking text of the toy base model's corpus (toybase): same slots as the judge but no
#: verdict is ever asked for or given. It is how the toy "instruct model" learnt to re-derive a
#: stated result, the skill a judge later builds on (a toy model did not learn the comparison from
#: the labels alone).
TOY_CHECK = "Recompute the new step.\nProblem: {problem}\nHistory: {history}\nNew step: {chunk}"

#: The history rule of every judge prompt: the chunks before the new one joined by a blank line
#: (not in the paper; its Tables 15-20 show the history as consecutive paragraphs), or
#: :data:`EMPTY_HISTORY` when there are none. An exported judge carries both (``stepwiser_judge.json``).
HISTORY_JOIN = "\n\n"
EMPTY_HISTORY = "(none)"

_FAMILIES = {
    "toy": {
        "chunk_policy": TOY_CHUNK_POLICY,
        "base_policy": TOY_BASE_POLICY,
        "judge": TOY_JUDGE,
        "judge_direct": TOY_JUDGE_DIRECT,
        "check": TOY_CHECK,
    },
    "paper": {
        "chunk_policy": PAPER_CHUNK_POLICY,
        "base_policy": PAPER_BASE_POLICY,
        "judge": PAPER_JUDGE,
        "judge_direct": PAPER_JUDGE_DIRECT,
        "segmentation_teacher": PAPER_SEGMENTATION_TEACHER,
    },
}


def get(family: str, name: str) -> str:
    """The template ``name`` of ``family`` ("toy" or "paper")."""
    if family not in _FAMILIES:
        raise ValueError(f"unknown prompt family {family!r}; valid: {sorted(_FAMILIES)}")
    if name not in _FAMILIES[family]:
        raise ValueError(f"prompt family {family!r} has no {name!r}; has {sorted(_FAMILIES[family])}")
    return _FAMILIES[family][name]


def check_prompt(problem: str, history: list[str], chunk: str) -> str:
    """The toy base's checking prompt (:data:`TOY_CHECK`) for one step, the history joined as the
    judge prompt joins it: what the toy base answers with its own analysis of the step (issue 47)."""
    return TOY_CHECK.format(problem=problem, history=HISTORY_JOIN.join(history) or EMPTY_HISTORY, chunk=chunk)


def judge_template(family: str, style: str = "cot") -> str:
    """The judge prompt template of ``family``: ``style="cot"`` is Table 3 (analysis, then
    verdict); ``"direct"`` asks for the verdict only (the no-CoT ablation)."""
    if style not in ("cot", "direct"):
        raise ValueError(f"unknown judge style {style!r}; valid: cot, direct")
    return get(family, "judge" if style == "cot" else "judge_direct")


def fill_judge(template: str, problem: str, history: list[str], chunk: str) -> str:
    """``template``'s three slots filled for one step, the history by :data:`HISTORY_JOIN`."""
    return template.format(
        problem=problem, history=HISTORY_JOIN.join(history) if history else EMPTY_HISTORY, chunk=chunk
    )


def judge_prompt(family: str, problem: str, history: list[str], chunk: str, style: str = "cot") -> str:
    """The judge prompt for one step (:func:`judge_template`, filled by :func:`fill_judge`)."""
    return fill_judge(judge_template(family, style), problem, history, chunk)
