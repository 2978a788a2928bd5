"""Stage 2: Monte-Carlo rollout labelling of chunks (paper §3.2, Eq. 2; §4.1; App. A.1).

For a prompt x and a chunk-policy response a = [a_1..a_H], Q_i is the success rate of M rollouts
continued from the prefix that *includes* chunk i (paper: M = 16, temperature 1.0). The final
chunk needs no rollouts: its Q is the verified correctness of the answer. Each Q is computed
once and serves as "after chunk i" and "before chunk i+1"; the value before the first chunk is
q0, the success rate of the 16 pre-filter samples of the bare prompt (our default: not in the
paper, which leaves the value before the first chunk undefined).

Three label rules (pure functions, tested on hand-computed cases):

* :func:`abs_q_labels` — positive iff Q_i > 0 (Math-Shepherd hard label);
* :func:`rel_effective_labels` — positive iff Q_i + alpha * A_i > 0 with A_i = mu(Q_i) - mu(Q_{i-1}),
  mu(x) = 1 - (1 - x)^n the best-of-n value (paper: n = 4);
* :func:`rel_ratio_labels` — positive iff Q_i / Q_{i-1} > gamma.

Engineering beyond the paper (all parameters, off where it changes results):

* **Batching**: every rollout of a shard's prefixes goes into one sorted, left-padded generate
  call (vLLM: one request per prefix with ``n = M`` and prefix caching).
* **Adaptive rollouts** (``adaptive=True``): rollouts come in rounds; a prefix stops once no
  outcome of its remaining rollouts could change any label that depends on it under the chosen
  rule (exact interval bound, so labels equal what full M would give on the same rollout stream).
* **Resumable shards**: prompts are processed in fixed shards, each written atomically with a
  footer (record count, checksum, the key of what its rollouts depend on). A restarted run
  skips valid shards, sets aside and redoes missing, truncated, corrupt or other-config ones, and
  ends with the labels of an uninterrupted run. Labels are recomputed from the stored Q when a
  shard is loaded, so a threshold change (``GAMMA``, ``ALPHA``, ``MU_N``) costs no rollout.

Command line (same function as the notebook)::

    python -m stepwiser_lib.method.labelling --profile tiny --out runs/tiny/artifacts/02_rollout_labelling
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import random
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..core import io, paths, prompts
from ..core.checks import check_fields
from ..core.chunks import CHUNK_OPEN, chunk_ends, last_boxed, paragraph_chunks, parse_chunks, prefix_ends
from ..core.config import ConfigError, checked_parameters, list_notebooks, notebook_parameters
from ..core.paths import model_fingerprint
from ..core.schemas import LABEL_RECORD
from ..core.vocab import RULES
from ..engines.checkpoints import resolve_model
from ..evals.paper_results import paper_rate
from . import tasks
from .sampling import chunk_format_ok, rates_line
from .tasks import check_many, is_correct

# ----------------------------------------------------------------------------- label rules

EPS = 1e-9  # strict ">" with float tolerance: an exact tie (e.g. 12/16 vs 0.8 * 15/16) is negative


def mu(x: float, n: int = 4) -> float:
    """Value of the best-of-n policy induced by pi with binary reward (paper §3.2, App. A.1)."""
    return 1.0 - (1.0 - x) ** n


def check_q(values, what: str = "Q") -> None:
    """A success rate is a number in [0, 1]: NaN, None, a string or 1.5 is an error, not a label
    (a NaN would otherwise become a negative)."""
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0:
            raise ValueError(f"{what} must be a success rate in [0, 1], got {v!r}")


def abs_q_labels(q: list[float]) -> list[bool]:
    """Abs-Q: positive iff Q_i > 0. ``q`` is the list of Q after each chunk."""
    check_q(q)
    return [qi > 0 for qi in q]


def rel_effective_label(qi: float, qprev: float, alpha: float, n: int = 4) -> bool:
    return qi + alpha * (mu(qi, n) - mu(qprev, n)) > EPS


def rel_effective_labels(q: list[float], q0: float, alpha: float, n: int = 4) -> list[bool]:
    """Rel-Effective: positive iff Q_i + alpha * (mu(Q_i) - mu(Q_{i-1})) > 0, Q_0 := q0.

    The paper writes "- if ... = 0"; since the score can be negative we read negative as
    score <= 0 (our reading of paper §3.2). Paper alpha (App. A.1): 0.4 (1.5B), 0.8 (7B).
    """
    check_q(q)
    check_q([q0], "q0")
    prev = [q0] + list(q[:-1])
    return [rel_effective_label(a, b, alpha, n) for a, b in zip(q, prev)]


def rel_ratio_label(qi: float, qprev: float, gamma: float) -> bool:
    if qprev == 0:
        return qi > 0  # [not in paper] division by zero: positive iff the chunk recovers
    return qi - gamma * qprev > EPS


def rel_ratio_labels(q: list[float], q0: float, gamma: float) -> list[bool]:
    """Rel-Ratio: positive iff Q_i / Q_{i-1} > gamma, Q_0 := q0; when Q_{i-1} = 0 positive iff
    Q_i > 0 (not in paper). Paper gamma: 0.8 (1.5B), 0.7 (7B)."""
    check_q(q)
    check_q([q0], "q0")
    prev = [q0] + list(q[:-1])
    return [rel_ratio_label(a, b, gamma) for a, b in zip(q, prev)]


def rule_label(rule: str, qi: float, qprev: float, alpha: float, gamma: float, n: int = 4) -> bool:
    if rule == "abs_q":
        return qi > 0
    if rule == "rel_effective":
        return rel_effective_label(qi, qprev, alpha, n)
    if rule == "rel_ratio":
        return rel_ratio_label(qi, qprev, gamma)
    raise ValueError(f"unknown rule {rule!r}; valid: {', '.join(RULES)}")


def label_settled(
    rule: str, lo: float, hi: float, lo_prev: float, hi_prev: float, alpha: float, gamma: float, n: int = 4
) -> bool:
    """Can no value of Q_i in [lo, hi] and Q_{i-1} in [lo_prev, hi_prev] change the label?

    Every rule is non-decreasing in Q_i and non-increasing in Q_{i-1} (mu is increasing, and the
    Rel-Ratio zero case agrees with the limit), so the two extreme corners decide. ``rule="all"``:
    settled under every rule.
    """
    if rule == "all":
        return all(label_settled(r, lo, hi, lo_prev, hi_prev, alpha, gamma, n) for r in RULES)
    return rule_label(rule, lo, hi_prev, alpha, gamma, n) == rule_label(rule, hi, lo_prev, alpha, gamma, n)


# ----------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
class LabelConfig:
    n_prefilter: int = 16  # paper §1.2: 16 responses per prompt, keep if not all right/wrong
    m_rollouts: int = 16  # paper: M = 16 completions per prefix
    temperature: float = 1.0  # paper: 1.0
    max_new_tokens: int = 160  # paper: 8192 or the final answer; toy solutions < 100 tokens
    traj_per_prompt: int = 4  # [not in paper] trajectories labelled per kept prompt
    alpha: float = 0.4  # Rel-Effective alpha (paper: 0.4 at 1.5B, 0.8 at 7B)
    gamma: float = 0.8  # Rel-Ratio gamma (paper: 0.8 at 1.5B, 0.7 at 7B)
    mu_n: int = 4  # best-of-n for Rel-Effective (paper App. A.1: n = 4)
    adaptive: bool = False  # [not in paper] stop sampling a prefix once its labels are settled
    adaptive_rule: str = "rel_ratio"  # the rule whose labels adaptive sampling must preserve, or all
    adaptive_round: int = 4  # rollouts per prefix per round when adaptive
    adaptive_z: float = 0.0  # 0: exact bound (labels as full M on the same stream); > 0: Wilson
    # interval of z standard errors on the success rate of the remaining rollouts (a confidence
    # bound: fewer rollouts, labels can differ from full M)
    shard_size: int = 16  # prompts per shard (the unit of resumption)
    # paper §4.1: 40k prompts *kept* by the pass@16 pre-filter. 0: label every prompt given; > 0:
    # stop after the shard in which this many prompts have been kept (the given prompts are the
    # pool drawn from, shard by shard; not a rollout setting, so not in a shard's key)
    n_kept: int = 0
    seed: int = 0
    # [shortcut, colab-smoke only] label each prompt's reference solution (paragraphs as chunks)
    # and keep every prompt: a random-weight policy solves nothing, so the pre-filter would keep
    # none and no sample would be a well-formed trajectory. Rollouts still come from the policy.
    reference_trajectories: bool = False

    #: What each field allows (stepwiser_lib.core.checks): the same as notebook 02's parameters.
    SPECS = {
        "n_prefilter": "int in [1, inf)",
        "m_rollouts": "int in [1, inf)",
        "temperature": "float in (0, inf)",
        "max_new_tokens": "int in [1, inf)",
        "traj_per_prompt": "int in [1, inf)",
        "alpha": "float in [0, inf)",
        "gamma": "float in [0, inf)",
        "mu_n": "int in [1, inf)",
        "adaptive_rule": "str in {abs_q, rel_effective, rel_ratio, all}",
        "adaptive_round": "int in [1, inf)",
        "adaptive_z": "float in [0, inf)",
        "shard_size": "int in [1, inf)",
        "n_kept": "int in [0, inf)",
        "seed": "int in [0, 4294967295]",  # numpy and torch take 32-bit seeds (issue 49)
    }

    def __post_init__(self):
        check_fields(self, self.SPECS, {k: k.upper() for k in self.SPECS})

    #: Label-rule settings adaptive sampling reads to decide when a prefix may stop.
    ADAPTIVE_READS = {
        "abs_q": (),
        "rel_effective": ("alpha", "mu_n"),
        "rel_ratio": ("gamma",),
        "all": ("alpha", "gamma", "mu_n"),
    }

    def rollout_fields(self) -> dict:
        """What a shard's rollouts depend on: sampling settings, the prompts' shard layout and
        seed, and the adaptive settings only when adaptive sampling is on (they decide which
        rollouts exist; the threshold of the rule it preserves too). Not the label thresholds
        otherwise: labels are recomputed from the stored Q when a shard is loaded."""
        keys = [
            "n_prefilter",
            "m_rollouts",
            "temperature",
            "max_new_tokens",
            "traj_per_prompt",
            "shard_size",
            "seed",
            "reference_trajectories",
        ]
        if self.adaptive:
            keys += [
                "adaptive",
                "adaptive_rule",
                "adaptive_round",
                "adaptive_z",
                *self.ADAPTIVE_READS.get(self.adaptive_rule, ()),
            ]
        return {k: getattr(self, k) for k in keys}

    def digest(self, model: str) -> str:
        """The key of a shard: :meth:`rollout_fields` and the policy, by path and, for a local
        model, by the fingerprint of its weights (a retrained policy at the same path must not
        reuse old rollouts)."""
        blob = json.dumps(
            {**self.rollout_fields(), "model": model, "weights": model_fingerprint(model)}, sort_keys=True
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def chunk_labels(q: float, q_prev: float, cfg: LabelConfig) -> dict[str, bool]:
    """The three labels of one chunk from its Q and the Q before it (``q0`` for the first)."""
    return {f"label_{r}": rule_label(r, q, q_prev, cfg.alpha, cfg.gamma, cfg.mu_n) for r in RULES}


def relabel(records: list[dict], cfg: LabelConfig) -> list[dict]:
    """Records with their labels recomputed from the stored ``q`` and ``q_prev`` under ``cfg``'s
    thresholds: changing ``GAMMA``, ``ALPHA`` or ``MU_N`` alone costs no rollout."""
    return [{**r, **chunk_labels(r["q"], r["q_prev"], cfg)} for r in records]


# ----------------------------------------------------------------------------- shards


class ShardError(ValueError):
    pass


def write_shard(path: Path, records: list[dict], meta: dict) -> None:
    """Records, then a footer line with their count and checksum; written atomically."""
    body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    footer = {"_footer": {**meta, "n": len(records), "sha256": hashlib.sha256(body.encode()).hexdigest()}}
    io.atomic_write_text(path, body + json.dumps(footer) + "\n")


def read_shard(path: Path, config_hash: str | None = None) -> tuple[list[dict], dict]:
    """Records and footer of a complete shard; :class:`ShardError` (so the shard is redone) if it
    is missing, unreadable, not UTF-8, truncated, corrupt, has a malformed footer or record, or
    was made with another configuration."""
    if not path.exists():
        raise ShardError(f"{path.name}: missing")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise ShardError(f"{path.name}: not UTF-8 at byte {e.start} (corrupt)") from None
    except OSError as e:
        raise ShardError(f"{path.name}: unreadable ({e.strerror})") from None
    if not text.endswith("\n"):
        raise ShardError(f"{path.name}: truncated (no complete footer)")
    # records end in "\n" only: str.splitlines would also break inside a JSON string holding
    # U+2028 or U+0085 (valid there), and set a whole shard aside on every resume (issue 49)
    lines = [ln + "\n" for ln in text[:-1].split("\n")]
    try:
        footer = io.loads_strict(lines[-1])["_footer"]
    except (ValueError, KeyError, TypeError):
        raise ShardError(f"{path.name}: truncated or corrupt (no footer)") from None
    if not isinstance(footer, dict):
        raise ShardError(f"{path.name}: corrupt footer (not an object)")
    body = "".join(lines[:-1])
    if hashlib.sha256(body.encode()).hexdigest() != footer.get("sha256"):
        raise ShardError(f"{path.name}: checksum mismatch (corrupt)")
    if config_hash is not None and footer.get("config") != config_hash:
        raise ShardError(f"{path.name}: made with another configuration")
    recs = []
    for n, line in enumerate(lines[:-1], 1):
        try:
            r = io.loads_strict(line)
        except ValueError:
            raise ShardError(f"{path.name}, line {n}: bad JSON (corrupt)") from None
        bad = (
            "not an object"
            if not isinstance(r, dict)
            else next(
                (
                    f"field {k!r}"
                    for k, t in LABEL_RECORD.items()
                    if not isinstance(r.get(k), t) or isinstance(r.get(k), bool)
                ),
                None,
            )
        )
        if not bad and not all(0 <= r[k] <= 1 for k in ("q", "q_prev", "q0")):
            bad = "a Q outside [0, 1]"
        if bad:
            raise ShardError(f"{path.name}, line {n}: malformed record ({bad})")
        recs.append(r)
    if len(recs) != footer.get("n"):
        raise ShardError(f"{path.name}: record count mismatch")
    if not isinstance(footer.get("stats"), dict) or not isinstance(footer.get("prompt_ids"), list):
        raise ShardError(f"{path.name}: corrupt footer (no stats or prompt ids)")
    return recs, footer


#: A shard's scratch file older than this was left by a killed process and is removed; a younger
#: one may be another run's write in progress (two runs into one folder).
STALE_TMP_SECONDS = 600

#: Why a shard was set aside, from the start of its ShardError (the suffix of the moved file).
_ASIDE = (
    ("made with another configuration", "other-config"),
    ("holds other prompts", "other-prompts"),
    ("truncated", "truncated"),
)


def set_aside(path: Path, reason: str) -> Path:
    """Move a shard that cannot be used out of the way, never overwriting it: to
    ``<name>.<why>`` (``shard_00003.jsonl.other-config``), numbered if that exists."""
    return io.set_aside(path, next((tag for text, tag in _ASIDE if text in reason), "corrupt"))


# ----------------------------------------------------------------------------- one shard


def choose_trajectories(samples: list[tuple[str, bool]], k: int, rng: random.Random) -> list[int]:
    """Indices of up to ``k`` well-formed samples, alternating wrong and right ones so that both
    outcomes are labelled. [not in paper]"""
    ok = [i for i, (t, _) in enumerate(samples) if chunk_format_ok(t)]
    rng.shuffle(ok)
    wrong = [i for i in ok if not samples[i][1]]
    right = [i for i in ok if samples[i][1]]
    out = []
    while len(out) < k and (wrong or right):
        for pool in (wrong, right):
            if pool and len(out) < k:
                out.append(pool.pop(0))
    return sorted(out)


@dataclass
class ShardStats:
    prompts: int = 0
    kept_prompts: int = 0
    trajectories: int = 0
    prefixes: int = 0
    rollouts: int = 0
    rollouts_full: int = 0  # what full M would have cost
    seconds: float = 0.0
    prefilter_seconds: float = 0.0
    truncated_rollouts: int = 0  # rollouts that hit the response budget or the context end unfinished
    skipped_rollouts: int = 0  # rollouts with no room left at all (counted as failures)
    # the policy's own pre-filter samples (what a real model writes; sampling.output_rates)
    prefilter_samples: int = 0
    prefilter_boxed: int = 0
    prefilter_correct: int = 0
    prefilter_chunk_tags: int = 0
    prefilter_chunk_format: int = 0
    prefilter_truncated: int = 0
    extra: dict = field(default_factory=dict)


def _rollout_round(
    generator,
    todo: list[tuple[dict, str]],
    n: int,
    cfg: LabelConfig,
    template: str,
    seed: int,
    st: ShardStats | None = None,
) -> list[int]:
    """Successes among ``n`` rollouts for each (item, prefix), in one batched generate call.

    A rollout completes the response its prefix began, so the prefix's tokens count against
    ``max_new_tokens`` (the paper's 8,192 tokens are a response's, not each continuation's). A
    rollout that reaches that budget (or the engine's context end) without an answer is a failure,
    as the response would be; one with no room at all is skipped and also a failure (``st``
    counts both: ``truncated_rollouts``, ``skipped_rollouts``). Never an error for the shard."""
    if not todo:
        return []
    outs = generator.generate(
        [template.format(problem=it["problem"]) for it, _ in todo],
        n=n,
        temperature=cfg.temperature,
        max_new_tokens=cfg.max_new_tokens,
        seed=seed,
        prefixes=[p for _, p in todo],
        count_prefix=True,
    )
    if st is not None:
        st.skipped_rollouts += sum(c.skipped for cs in outs for c in cs)
        st.truncated_rollouts += sum(not c.finished and not c.skipped for cs in outs for c in cs)
    ok = check_many([(it, p + c.text) for (it, p), cs in zip(todo, outs) for c in cs])  # a pool for real math
    starts = [0]
    for cs in outs:
        starts.append(starts[-1] + len(cs))
    return [sum(not c.skipped and ok[s + j] for j, c in enumerate(cs)) for s, cs in zip(starts, outs)]


def label_shard(
    generator, items: list[dict], template: str, cfg: LabelConfig, shard_id: int
) -> tuple[list[dict], ShardStats]:
    """Pre-filter, choose trajectories, roll out every intermediate prefix, label every chunk."""
    t0 = time.time()
    st = ShardStats(prompts=len(items))
    base_seed = cfg.seed * 100_003 + shard_id * 7919
    rng = random.Random(base_seed)
    prompts = [template.format(problem=it["problem"]) for it in items]
    pre = generator.generate(
        prompts, n=cfg.n_prefilter, temperature=cfg.temperature, max_new_tokens=cfg.max_new_tokens, seed=base_seed
    )
    st.prefilter_seconds = time.time() - t0
    # Rollouts continue from each prefix; cut where the tokenizer has a boundary (chunks.SEPARATOR).
    cut = prefix_ends if getattr(generator, "cut_after_separator", False) else chunk_ends
    trajs = []  # (item, q0, response, correct, traj index)
    checked = iter(check_many([(it, c.text) for it, cands in zip(items, pre) for c in cands]))
    for it, cands in zip(items, pre):
        res = [(c.text, next(checked)) for c in cands]
        q0 = sum(ok for _, ok in res) / len(res)
        st.prefilter_samples += len(res)
        st.prefilter_boxed += sum(last_boxed(t) is not None for t, _ in res)
        st.prefilter_correct += sum(ok for _, ok in res)
        st.prefilter_chunk_tags += sum(CHUNK_OPEN in t for t, _ in res)
        st.prefilter_chunk_format += sum(chunk_format_ok(t) for t, _ in res)
        st.prefilter_truncated += sum(not c.finished for c in cands)
        if cfg.reference_trajectories:
            ref = paragraph_chunks(it["solution"])
            res, names = [(ref, bool(is_correct(it, ref)))], ["ref"]
        elif not 0 < q0 < 1:
            continue
        else:
            names = [f"s{j}" for j in range(len(res))]
        st.kept_prompts += 1
        for j in choose_trajectories(res, cfg.traj_per_prompt, rng):
            trajs.append(
                {
                    "item": it,
                    "q0": q0,
                    "response": res[j][0],
                    "correct": res[j][1],
                    "sample": names[j],
                    "ends": cut(res[j][0]),
                }
            )
    st.trajectories = len(trajs)
    # Intermediate prefixes (the last chunk's Q is its verified correctness).
    for t in trajs:
        t["mc"] = Rollouts.start(t["q0"], t["correct"], len(t["ends"]) - 1)
    pref = [(ti, i) for ti, t in enumerate(trajs) for i in range(len(t["ends"]) - 1)]
    st.prefixes = len(pref)
    st.rollouts_full = len(pref) * cfg.m_rollouts
    M = cfg.m_rollouts
    round_n = cfg.adaptive_round if cfg.adaptive else M
    rnd = 0
    active = list(pref)
    while active:
        todo = [(trajs[ti]["item"], trajs[ti]["response"][: trajs[ti]["ends"][i]]) for ti, i in active]
        n = min(round_n, M - trajs[active[0][0]]["mc"].done[active[0][1]])
        succ = _rollout_round(generator, todo, n, cfg, template, seed=base_seed + 1 + rnd, st=st)
        for (ti, i), s in zip(active, succ):
            trajs[ti]["mc"].succ[i] += s
            trajs[ti]["mc"].done[i] += n
        st.rollouts += n * len(active)
        rnd += 1
        active = [
            (ti, i)
            for ti, i in active
            if trajs[ti]["mc"].done[i] < M and not (cfg.adaptive and trajs[ti]["mc"].settled(i, cfg))
        ]
    records = []
    for t in trajs:
        chunks = parse_chunks(t["response"])
        h = len(chunks)
        q = t["mc"].q()
        n_used = t["mc"].done + [0]
        tid = f"{t['item']['id']}/{t['sample']}"
        for i in range(h):
            records.append(
                {
                    "problem_id": t["item"]["id"],
                    "problem": t["item"]["problem"],
                    "traj_id": tid,
                    "chunk_index": i,
                    "n_chunks": h,
                    "history": chunks[:i],
                    "chunk": chunks[i],
                    "q": q[i],
                    "q_prev": q[i - 1] if i else t["q0"],
                    "q0": t["q0"],
                    "n_rollouts": n_used[i],
                    "is_final": i == h - 1,
                    "traj_correct": t["correct"],
                    **chunk_labels(q[i], q[i - 1] if i else t["q0"], cfg),
                }
            )
    st.seconds = time.time() - t0
    return records, st


@dataclass
class Rollouts:
    """One trajectory's Monte-Carlo state (paper Eq. 2): ``q0`` (the bare prompt's success rate),
    whether the full response is ``correct``, and per intermediate prefix i the successes
    ``succ[i]`` among the ``done[i]`` rollouts so far. The labelling loop and ``make bench``
    (:mod:`stepwiser_lib.tools.bench`) share it, so both replay the same adaptive stopping rule."""

    q0: float
    correct: bool
    succ: list[int]
    done: list[int]

    @classmethod
    def start(cls, q0: float, correct: bool, n_prefixes: int) -> Rollouts:
        return cls(q0, bool(correct), [0] * n_prefixes, [0] * n_prefixes)

    def q(self) -> list[float]:
        """Q of every chunk: the rollouts' success rate after each intermediate prefix, then the
        final chunk's verified correctness (1/0)."""
        return [s / d for s, d in zip(self.succ, self.done)] + [1.0 if self.correct else 0.0]

    def interval(self, i: int, m: int, z: float = 0.0) -> tuple[float, float]:
        """Range Q_i can still end in after ``m`` rollouts in all (exact for q0 and the final chunk).
        With ``z > 0`` the remaining rollouts' success rate is bounded by a Wilson interval instead
        of [0, 1]."""
        if i < 0:
            return self.q0, self.q0
        if i >= len(self.succ):
            v = 1.0 if self.correct else 0.0
            return v, v
        s, d = self.succ[i], self.done[i]
        p_lo, p_hi = 0.0, 1.0
        if z > 0 and d > 0:
            p = s / d
            den = 1 + z * z / d
            c = (p + z * z / (2 * d)) / den
            h = z * ((p * (1 - p) / d + z * z / (4 * d * d)) ** 0.5) / den
            p_lo, p_hi = max(0.0, c - h), min(1.0, c + h)
        return (s + (m - d) * p_lo) / m, (s + (m - d) * p_hi) / m

    def settled(self, i: int, cfg: LabelConfig) -> bool:
        """Prefix i may stop when the labels of chunk i and chunk i+1 (both depend on Q_i) are
        settled under ``cfg.adaptive_rule`` for every outcome of the remaining rollouts."""
        for j in (i, i + 1):
            lo, hi = self.interval(j, cfg.m_rollouts, cfg.adaptive_z)
            lp, hp = self.interval(j - 1, cfg.m_rollouts, cfg.adaptive_z)
            if not label_settled(cfg.adaptive_rule, lo, hi, lp, hp, cfg.alpha, cfg.gamma, cfg.mu_n):
                return False
        return True


# ----------------------------------------------------------------------------- driver


def label_prompts(
    generator,
    items: list[dict],
    template: str,
    cfg: LabelConfig,
    out_dir: str | Path,
    model_id: str,
    progress: bool = True,
    stop_after: int | None = None,
    worker: int = 0,
    workers: int = 1,
) -> dict:
    """Label all prompts shard by shard, resuming from valid shards in ``out_dir/shards``.

    With ``cfg.n_kept`` > 0, ``items`` is a pool: shards are labelled in order until that many
    prompts have passed the pre-filter (the paper's 40k are kept prompts, not drawn ones), and
    the shards after it are never sampled. ``stop_after`` (tests) raises :class:`KeyboardInterrupt`
    after that many newly written shards, as an interruption would. Returns ``{"records",
    "stats", "resumed", "redone", "shards"}`` (``shards``: how many were used).

    **Data-parallel workers** (issue 34): with ``workers`` K > 1, this process labels only the
    shards ``sid % K == worker`` that are not on disk yet, one process (and one engine) per GPU or
    node, all writing to one shared ``out_dir``. Another worker's shard is read when it is there
    and otherwise skipped, never redone. With ``n_kept``, before each of its shards a worker
    re-reads which earlier shards are finished (issue 48: deciding once, from what was finished
    when it passed, made 4 workers label 2.9x the needed shards in no less time) and labels the
    shard only if the earlier ones may not keep enough: finished shards count what they kept,
    unfinished ones the keep rate seen so far (:func:`may_be_needed`). So K workers label about the
    needed shards plus one round, each about 1/K of them. A run with one worker (the notebook, or
    the CLI without ``--worker``) then resumes every shard, labels any that the estimate skipped
    but the prefix needs, and writes ``labels.jsonl``: a shard's labels depend on its seed and
    prompts only, so the labels are byte-identical whatever K was. A worker that dies loses only
    the shard it was labelling.
    """
    if not 0 <= worker < workers:
        raise ValueError(f"worker {worker} of {workers}: want 0 <= worker < workers")
    from tqdm.auto import tqdm

    if cfg.reference_trajectories and any("solution" not in it for it in items):  # checked before any compute
        raise ValueError(
            "REFERENCE_TRAJECTORIES labels each problem's reference solution, and these problems have "
            f"none (only the tasks {', '.join(tasks.WITH_SOLUTIONS)} carry one); set it false or change TASK"
        )
    out = Path(out_dir) / "shards"
    out.mkdir(parents=True, exist_ok=True)
    for tmp in out.glob(".shard_*.tmp"):  # left by a process killed while writing; a fresh one may be
        with contextlib.suppress(OSError):  # another live run's write in progress: kept
            if time.time() - tmp.stat().st_mtime > STALE_TMP_SECONDS:
                tmp.unlink()
    h = cfg.digest(model_id)
    shards = [items[i : i + cfg.shard_size] for i in range(0, len(items), cfg.shard_size)]
    records, stats, resumed, redone, written = [], [], 0, [], 0
    bar = tqdm(total=len(items), unit="prompt", desc="labelling", disable=not progress)
    t_start, n_roll, n_pref = time.time(), 0, 0
    seen: dict[int, ShardStats] = {}  # workers with n_kept: finished shards, any worker's, by sid
    for sid, shard in enumerate(shards):
        path = out / f"shard_{sid:05d}.jsonl"
        if workers > 1 and cfg.n_kept:
            if sid % workers != worker:
                bar.update(len(shard))
                continue  # read below, when this worker's next shard asks what is finished before it
            _refresh_finished(seen, shards, sid, out, h)
            if not may_be_needed(seen, shards, sid, cfg.n_kept):
                break  # the shards before this one keep enough (or are expected to): never sampled
        elif sid % workers != worker:  # another worker's: read when it is there, never labelled here
            try:
                recs, footer = read_shard(path, h)
                if footer.get("prompt_ids") != [it["id"] for it in shard]:
                    raise ShardError(f"{path.name}: holds other prompts")
                stats.append(ShardStats(**footer["stats"]))
                records.extend(relabel(recs, cfg))
            except (ShardError, TypeError):
                pass
            bar.update(len(shard))
            if cfg.n_kept and sum(x.kept_prompts for x in stats) >= cfg.n_kept:
                break
            continue
        try:
            recs, footer = read_shard(path, h)
            if footer.get("prompt_ids") != [it["id"] for it in shard]:
                raise ShardError(f"{path.name}: holds other prompts")
            st = ShardStats(**footer["stats"])
            recs = relabel(recs, cfg)  # the thresholds of this run, on the stored Q
            resumed += 1
        except (ShardError, TypeError) as e:  # TypeError: footer stats of another version
            if path.exists():
                moved = set_aside(path, str(e))
                redone.append(f"{e} -> set aside as {moved.name}")
            elif sid < max((int(q.name[6:11]) for q in out.glob("shard_*.jsonl")), default=-1):
                redone.append(f"{path.name}: missing, while later shards are there -> labelled again")
            recs, st = label_shard(generator, shard, template, cfg, sid)
            write_shard(
                path, recs, {"config": h, "shard": sid, "stats": asdict(st), "prompt_ids": [it["id"] for it in shard]}
            )
            written += 1
            n_roll += st.rollouts
            n_pref += st.prefixes
        records.extend(recs)
        stats.append(st)
        seen[sid] = st
        dt = max(time.time() - t_start, 1e-9)
        bar.set_postfix(prefixes=sum(s.prefixes for s in stats), rollouts_per_s=f"{n_roll / dt:.0f}")
        bar.update(len(shard))
        if cfg.n_kept and workers == 1 and sum(x.kept_prompts for x in stats) >= cfg.n_kept:
            break  # enough prompts kept: the rest of the pool is never sampled
        if stop_after is not None and written >= stop_after and sid + 1 < len(shards):
            bar.close()
            raise KeyboardInterrupt(f"stopped after {written} new shard(s) (test hook)")
    bar.close()
    if workers > 1 and cfg.n_kept:  # what this worker saw of the others' finished shards, in order
        _refresh_finished(seen, shards, len(shards), out, h)
        stats = [seen[j] for j in sorted(seen)]  # (records: this worker's own shards')
    if cfg.n_kept and workers == 1 and sum(x.kept_prompts for x in stats) < cfg.n_kept:
        print(
            f"[labelling] {sum(x.kept_prompts for x in stats)} prompts kept of the {cfg.n_kept} wanted (N_KEPT): the "
            f"pool of {len(items)} prompts (N_PROMPTS) ran out; raise N_PROMPTS"
        )
    total = ShardStats(
        **{
            k: sum(getattr(s, k) for s in stats)
            for k in (
                "prompts",
                "kept_prompts",
                "trajectories",
                "prefixes",
                "rollouts",
                "rollouts_full",
                "seconds",
                "prefilter_seconds",
                "truncated_rollouts",
                "skipped_rollouts",
                "prefilter_samples",
                "prefilter_boxed",
                "prefilter_correct",
                "prefilter_chunk_tags",
                "prefilter_chunk_format",
                "prefilter_truncated",
            )
        }
    )
    return {
        "records": records,
        "stats": asdict(total),
        "resumed": resumed,
        "redone": redone,
        "shards": len(stats),
        "written": written,
    }


def _refresh_finished(seen: dict, shards: list, upto: int, out: Path, config_hash: str) -> None:
    """Add to ``seen`` every shard before ``upto`` that another worker finished since the last look
    (a finished shard is complete on disk: written under a temporary name, then renamed)."""
    for j in range(upto):
        if j in seen:
            continue
        try:
            _, footer = read_shard(out / f"shard_{j:05d}.jsonl", config_hash)
            if footer.get("prompt_ids") != [it["id"] for it in shards[j]]:
                continue
            seen[j] = ShardStats(**footer["stats"])
        except (ShardError, TypeError):
            continue  # not there yet (or to be redone by its owner or the merge)


def may_be_needed(seen: dict, shards: list, sid: int, n_kept: int) -> bool:
    """Whether shard ``sid`` may be in the prefix of shards that keeps ``n_kept`` prompts, the
    prefix the merge uses (issue 48): the shards before it that are finished (``seen``: sid ->
    stats) count the prompts they kept; those not finished yet count their prompts times the keep
    rate of the finished ones (none while none is finished). The estimate is unbiased, so it may
    skip a shard the prefix turns out to need: the merge then labels that one on one process, and
    no label changes."""
    before = [j for j in range(sid) if j in seen]
    kept = sum(seen[j].kept_prompts for j in before)
    drawn = sum(seen[j].prompts for j in before)
    rate = kept / drawn if drawn else 0.0  # nothing finished yet: nothing to estimate from, so label
    pending = sum(len(shards[j]) for j in range(sid) if j not in seen)
    return kept + rate * pending < n_kept


def prefilter_rates(stats: dict) -> dict:
    """The pre-filter samples' :func:`stepwiser_lib.method.sampling.output_rates` from labelling stats
    (shards written before these counts were kept report ``n`` 0)."""
    n = stats.get("prefilter_samples", 0)
    pct = lambda k: round(100 * stats.get(k, 0) / n, 1) if n else None  # noqa: E731
    return {
        "n": n,
        "boxed": pct("prefilter_boxed"),
        "correct": pct("prefilter_correct"),
        "chunk_tags": pct("prefilter_chunk_tags"),
        "chunk_format": pct("prefilter_chunk_format"),
        "truncated": pct("prefilter_truncated"),
    }


def no_chunks_message(stats: dict, max_new_tokens: int) -> str:
    """Why a labelling run produced no labelled chunk, from its stats, the likeliest cause first and
    each with the setting to change (a run whose every sample was cut at ``MAX_NEW_TOKENS`` used
    to be told to raise N_PROMPTS / N_PREFILTER, as if the pre-filter had failed)."""
    n, cut = stats.get("prefilter_samples", 0), stats.get("prefilter_truncated", 0)
    causes = []
    if n and cut * 2 >= n:
        causes.append(
            f"{cut} of {n} pre-filter samples were cut at MAX_NEW_TOKENS = {max_new_tokens} before the policy "
            "finished: raise MAX_NEW_TOKENS"
        )
    if not stats.get("kept_prompts"):
        causes.append(
            f"the pre-filter kept none of {stats.get('prompts', 0)} prompts (it keeps a prompt when some, not "
            f"all, of its N_PREFILTER samples are correct; {stats.get('prefilter_correct', 0)} of {n} were): "
            "raise N_PROMPTS or N_PREFILTER"
        )
    else:
        causes.append(
            f"the policy wrote no chunk ({stats.get('prefilter_chunk_format', 0)} of {n} samples had the chunk "
            "format): check notebook 01's chunk format rate"
        )
    return "no labelled chunks: " + "; ".join(causes)


def label_summary(records: list[dict]) -> dict:
    """Positive rates (%) of the three rules over all chunks, and basic counts."""
    n = len(records)
    if not n:
        return {"chunks": 0}
    return {
        "chunks": n,
        "trajectories": len({r["traj_id"] for r in records}),
        "problems": len({r["problem_id"] for r in records}),
        **{f"positive_{r}": round(100 * sum(x[f"label_{r}"] for x in records) / n, 2) for r in RULES},
        "mean_q": round(sum(x["q"] for x in records) / n, 4),
    }


def per_second(rate: float) -> str:
    """A rate in three significant figures, whole from 100 up: a real model on a CPU labels 0.10
    rollouts per second, which a whole number prints as 0 (issue 48: regressed once already)."""
    return f"{rate:,.0f}" if rate >= 100 else f"{rate:.3g}"


def stats_lines(st: dict, summary: dict) -> list[str]:
    """Notebook 02's labelling run in three lines a reader can take in (the stats and the label
    summary as words, not two JSON dumps: issue 36)."""
    frac = st["rollouts"] / st["rollouts_full"] if st.get("rollouts_full") else 1.0
    rate = st["rollouts"] / max(st["seconds"] - st["prefilter_seconds"], 1e-9)
    return [
        f"prompts: {st['prompts']} asked, {st['kept_prompts']} kept by the pre-filter -> {st['trajectories']} trajectories, "
        f"{st['prefixes']} chunk prefixes rolled out, {summary['chunks']} chunks labelled on {summary['problems']} problems",
        f"rollouts: {st['rollouts']:,} of the {st['rollouts_full']:,} a full M per prefix would take ({100 * frac:.0f}%), "
        f"{per_second(rate)} per second in the run that computed them ({st['seconds']:.0f} s, {st['prefilter_seconds']:.0f} s of it "
        f"the pre-filter)",
        "Positive labels: "
        + ", ".join(f"{RULE_NAMES.get(r, r)} {summary[f'positive_{r}']:.1f}%" for r in RULES)
        + f"; mean Q {summary['mean_q']:.2f}",
    ]


#: How the tables name the three rules.
RULE_NAMES = {"abs_q": "Abs-Q", "rel_effective": "Rel-Effective", "rel_ratio": "Rel-Ratio"}


def results_markdown(metrics: dict) -> str:
    """``results/<profile>/labelling.md``, from notebook 02's metrics: the Positive rate of each rule
    beside the paper's (1.5B-chunk policy)."""
    s, st, paper = metrics["summary"], metrics["stats"], metrics.get("paper_positive_rates", {})
    rows = [
        {
            "rule": r,
            "positive % (ours)": s[f"positive_{r}"],
            "positive % (paper, 1.5B-chunk)": paper_rate(paper, r),
        }
        for r in RULES
    ]
    return (
        f"{s['chunks']} chunks of {s['trajectories']} trajectories ({st['kept_prompts']}/{st['prompts']} prompts "
        f"kept by the pre-filter); {st['rollouts']} rollouts of {st['rollouts_full']} at full M.\n\n"
        + io.markdown_table(rows, ["rule", "positive % (ours)", "positive % (paper, 1.5B-chunk)"])
        + "\n"
    )


# ----------------------------------------------------------------------------- notebook 02's cells


def rollout_demo(policy, item: dict, template: str, cfg: LabelConfig, n_samples: int = 4, n_rollouts: int = 8) -> dict:
    """Eq. 2 for one prefix (notebook 02, section 1): ``n_samples`` trajectories sampled for ``item``
    (seed ``cfg.seed``), the first with at least two chunks kept (else the first), then
    ``n_rollouts`` rollouts continued from the prefix that ends with its first chunk (seed
    ``cfg.seed + 1``), each checked against the answer. ``prefix`` is None, and there are no
    rollouts, when the trajectory has fewer than two chunks."""
    prompt = template.format(problem=item["problem"])
    gen = dict(temperature=cfg.temperature, max_new_tokens=cfg.max_new_tokens)
    samples = policy.generate([prompt], n=n_samples, seed=cfg.seed, **gen)[0]
    traj = next((c.text for c in samples if len(chunk_ends(c.text)) >= 2), samples[0].text)
    ends = chunk_ends(traj)
    out = {"item": item, "chunks": parse_chunks(traj), "prefix": None, "rollouts": [], "correct": []}
    if len(ends) >= 2:
        prefix = traj[: ends[0]]
        rolls = policy.generate([prompt], n=n_rollouts, seed=cfg.seed + 1, prefixes=[prefix], **gen)[0]
        out.update(
            prefix=prefix,
            rollouts=[r.text for r in rolls],
            correct=[is_correct(item, prefix + r.text) for r in rolls],
        )
    return out


def rollout_demo_lines(demo: dict, tail: int = 90) -> list[str]:
    """:func:`rollout_demo` as printed lines: the problem, the trajectory chunk by chunk, the end
    of the first correct and of the first wrong rollout (in the order sampled), and Q after the
    first chunk from all the rollouts."""
    item, wins = demo["item"], demo["correct"]
    lines = [f"PROBLEM: {item['problem']} | answer {item['answer']}"]
    lines += [f"  chunk {i}: {ch!r}" for i, ch in enumerate(demo["chunks"])]
    for k in sorted({wins.index(w) for w in wins}):  # the first of each outcome, in the order sampled
        lines.append(f"--- rollout ({'correct' if wins[k] else 'wrong'}): ...{demo['rollouts'][k][-tail:]!r}")
    if wins:
        n = len(wins)
        lines.append(f"Q after chunk 0 from these {n} rollouts = {sum(wins)}/{n} = {sum(wins) / n:.3f}")
    return lines


def labelled_records(res: dict, max_new_tokens: int) -> list[dict]:
    """The records of a :func:`label_prompts` result; a RuntimeError that names the likeliest cause
    (:func:`no_chunks_message`) when no chunk was labelled."""
    if not res["records"]:
        raise RuntimeError(no_chunks_message(res["stats"], max_new_tokens))
    return res["records"]


def run_lines(res: dict, summary: dict) -> list[str]:
    """A :func:`label_prompts` run in words (notebook 02, section 2): :func:`stats_lines`, how many
    shards came from an earlier run's files (their times are that run's), the pre-filter samples'
    rates and the rollouts cut at the response budget."""
    st = res["stats"]
    lines = stats_lines(st, summary)
    if res["resumed"]:
        lines.append(f"({res['resumed']} shard(s) read from an earlier run's files, {len(res['redone'])} redone)")
    lines.append("pre-filter: " + rates_line(prefilter_rates(st), "samples"))
    lines.append(
        f"rollouts: {st['truncated_rollouts']} of {st['rollouts']} cut at the response budget (counted as failures), "
        f"{st['skipped_rollouts']} with no room left at all (failures, never an error)"
    )
    return lines


def disagreement_lines(records: list[dict], checker=None, show: int = 2) -> list[str]:
    """Where the rules disagree: how many chunks keep Q > 0 but lower it enough to be Abs-Q Positive
    and Rel-Ratio Negative (final chunks aside), then the first ``show`` of them with Q before and
    after and the exact checker's verdict (``checker``: record -> bool or None; toy world:
    :func:`stepwiser_lib.method.tasks.step_truth`). No lines without records."""
    if not records:
        return []
    dis = [r for r in records if r["label_abs_q"] and not r["label_rel_ratio"] and not r["is_final"]]
    kinds = {True: " (label noise: the chunk is right)", False: " (the chunk is wrong: Rel-Ratio is right here)"}
    lines = [f"{len(dis)} of {len(records)} chunks are Abs-Q positive but Rel-Ratio negative"]
    for r in dis[:show]:
        truth = checker(r) if checker else None
        lines.append(
            f"--- PROBLEM: {r['problem']}\n    Q went {r['q_prev']:.3f} -> {r['q']:.3f}, exact checker: {truth}"
            f"{kinds.get(truth, '')}: chunk {r['chunk']!r}"
        )
    return lines


def rate_lines(cis: dict, paper: dict) -> list[str]:
    """Markdown bullets: each rule's positive rate with its 95% interval (``cis``: rule -> the
    dict of :func:`stepwiser_lib.tools.teaching.positive_rate_ci`, or None to leave it out) beside
    the paper's (:func:`paper_rate`)."""
    out = []
    for rule, c in cis.items():
        if c:
            p = paper_rate(paper, rule)
            out.append(
                f"- **{rule}**: {c['rate']}% positive [{c['low']}, {c['high']}] over {c['chunks']} chunks of "
                f"{c['problems']} problems; paper: {'not reported' if p is None else f'{p}%'}"
            )
    return out


def main(argv: list[str] | None = None, profiles_dir: str | Path | None = None) -> int:
    """Run the labelling of notebook 02 outside a kernel, with a profile's parameters. The whole
    profile is checked first, as the runner does (a bad value: exit 2, before any model loads)."""
    ap = argparse.ArgumentParser(description="Monte-Carlo rollout labelling (notebook 02)")
    ap.add_argument("--profile", default="tiny")
    ap.add_argument("--out", default=None, help="output folder (default: the notebook's artifact folder)")
    ap.add_argument(
        "--worker", type=int, default=0, help="this worker's index, 0 .. WORKERS-1 (data-parallel labelling)"
    )
    ap.add_argument(
        "--workers",
        type=int,
        default=1,
        help="workers labelling one output folder together, one per GPU or node; each labels the "
        "shards with index %% WORKERS == WORKER; then a run without --worker (or notebook 02) "
        "merges them into labels.jsonl",
    )
    a = ap.parse_args(argv)
    if not 0 <= a.worker < a.workers:
        print(
            f"[labelling] configuration error: --worker {a.worker} --workers {a.workers}: want 0 <= worker < workers",
            file=sys.stderr,
        )
        return 2
    nb = paths.NOTEBOOKS_DIR / "02_rollout_labelling.ipynb"
    try:
        p = {k: v.default for k, v in notebook_parameters(nb).items()}
        p.update(
            checked_parameters(
                a.profile, list_notebooks(only=["02"]), **({"profiles_dir": Path(profiles_dir)} if profiles_dir else {})
            )[nb.stem]
        )
        cfg = label_config_from_params(p)
        if p["REFERENCE_TRAJECTORIES"] and tasks.reference_problem(p["TASK"]):  # before the model loads
            raise ConfigError(tasks.reference_problem(p["TASK"]))
        # (issue 49) the output root the caller meant, and the data files, before the model loads
        paths.pin_output_root()
        files = tasks.file_kw(p["DATA_FILES"], p["TASK"])
        policy = resolve_model(p["POLICY_MODEL"], a.profile)
    except (ConfigError, FileNotFoundError) as e:
        print(f"[labelling] configuration error: {e}", file=sys.stderr)
        return 2
    from ..engines.models import engine_settings, make_generator, set_threads  # lazy: torch

    set_threads()
    gen = make_generator(policy, backend=p["BACKEND"], batch_size=p["GEN_BATCH"], **engine_settings(p))
    items = tasks.load_problems(p["TASK"], "label", p["N_PROMPTS"], seed=p["SEED"], **files)
    out = Path(a.out or paths.artifacts(a.profile, nb.stem))
    try:
        res = label_prompts(
            gen,
            items,
            prompts.get(p["PROMPT_FAMILY"], "chunk_policy"),
            cfg,
            out,
            policy,
            worker=a.worker,
            workers=a.workers,
        )
    except KeyboardInterrupt:
        print(
            f"[labelling] interrupted; the finished shards are in {out / 'shards'} and the next run resumes from them",
            file=sys.stderr,
        )
        return 130
    except OSError as e:  # a full disk or a folder that cannot be written: the shards written stay
        print(
            f"[labelling] could not write {e.filename or out}: {e.strerror or e}; the finished shards are in "
            f"{out / 'shards'} and the next run resumes from them once there is room",
            file=sys.stderr,
        )
        return 1
    if a.workers > 1:  # the merge (a run with one worker, or notebook 02) writes labels.jsonl
        print(
            json.dumps(
                {
                    "worker": a.worker,
                    "workers": a.workers,
                    "labelled_shards": res["written"],
                    "shards": str(out / "shards"),
                },
                indent=1,
            )
        )
        return 0
    if not res["records"]:
        print(f"[labelling] {no_chunks_message(res['stats'], cfg.max_new_tokens)}", file=sys.stderr)
        return 1
    io.write_jsonl(out / "labels.jsonl", res["records"])
    print(
        json.dumps(
            {
                **res["stats"],
                **label_summary(res["records"]),
                "resumed_shards": res["resumed"],
                "redone_shards": res["redone"],
                "labels": str(out / "labels.jsonl"),
            },
            indent=1,
        )
    )
    return 0


def label_config_from_params(p: dict) -> LabelConfig:
    return LabelConfig(
        n_prefilter=p["N_PREFILTER"],
        m_rollouts=p["M_ROLLOUTS"],
        temperature=p["TEMPERATURE"],
        max_new_tokens=p["MAX_NEW_TOKENS"],
        traj_per_prompt=p["TRAJ_PER_PROMPT"],
        alpha=p["ALPHA"],
        gamma=p["GAMMA"],
        mu_n=p["MU_N"],
        adaptive=p["ADAPTIVE"],
        adaptive_rule=p["ADAPTIVE_RULE"],
        adaptive_round=p["ADAPTIVE_ROUND"],
        adaptive_z=p["ADAPTIVE_Z"],
        shard_size=p["SHARD_SIZE"],
        n_kept=p["N_KEPT"],
        seed=p["SEED"],
        reference_trajectories=p["REFERENCE_TRAJECTORIES"],
    )


if __name__ == "__main__":
    raise SystemExit(main())
