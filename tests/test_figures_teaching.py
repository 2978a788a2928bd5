"""The figures issue 19 redrew (notebooks 03, 05, 07): what each one draws from what it gets."""

import pytest

from stepwiser_lib.tools import plotting


def test_balancing_figure_pairs_before_and_after_and_counts_each_point():
    stats = {
        r: {"train_unbalanced": {"positive_rate": p}, "train_balanced": {"positive_rate": 50.0}}
        for r, p in (("abs_q", 70.0), ("rel_ratio", 60.0))
    }
    recs = [
        {
            "history": ["h" * 10] * i,
            "chunk": "c" * 20,
            "chunk_index": i,
            "traj_correct": ok,
            "label_abs_q": True,
            "label_rel_ratio": i == 0,
        }
        for i in range(3)
        for ok in (True, False)
    ]
    fig = plotting.balancing_figure(stats, recs, 0, 4000)
    assert [p.get_height() for p in fig.axes[0].patches] == [70.0, 60.0]  # before: one bar per rule
    assert [tuple(line.get_ydata()) for line in fig.axes[0].lines] == [(50.0, 50.0), (50.0, 50.0)]  # after: a mark
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["abs_q", "rel_ratio"]
    assert len(fig.axes[2].lines) == 2 and len(fig.axes[2].texts) == 6  # correct / wrong; n at every point
    assert "100% kept by the filter; cut-offs 0-4000 chars, off the chart" in fig.axes[1].get_title()


def test_processbench_figure_draws_the_baselines_and_marks_zero():
    res = {"j": {"s1": {"f1": 0.0}, "s2": {"f1": 40.0}}}
    base = {
        "always-Positive [toy]": {"s1": {"f1": 0.0}, "s2": {"f1": 0.0}},
        "calculator [real ProcessBench]": {"r1": {"f1": 50.0}},
    }  # other splits: left out
    fig = plotting.processbench_figure(res, {"j": {"exact": 1, "false_alarm": 3}}, "toy", base)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["always-Positive [toy] (avg 0.0)", "j (avg 20.0)"]
    assert sum(t.get_text() == "0" for t in fig.axes[0].texts) == 3
    assert sum(p.get_hatch() == "//" for p in fig.axes[0].patches) == 2


def test_rsft_points_against_the_policy_before():
    rows = [
        {"method": "chunk policy (greedy, no RS-FT)", "avg": 90.0, "std": 0.0},
        {"method": "outcome-based selection", "avg": 89.0, "std": 1.0},
        {"method": "j", "avg": 92.0, "std": 0.5},
    ]
    fig = plotting.rsft_bars(rows, {"chunk policy (greedy, no RS-FT)": (88.0, 92.0), "j": (90.0, 94.0)})
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["outcome-based selection", "j"]
    assert ax.lines[0].get_ydata()[0] == 90.0  # the policy before RS-FT, as a line
    assert list(ax.containers[0].lines[0].get_ydata()) == pytest.approx([89.0, 92.0])


def test_step_counts_figure_gives_each_policy_one_colour_and_an_interval():
    s_base = {"avg_acc": 60.0, "ci95": {"low": 50.0, "high": 70.0}}
    s_chunk = {"avg_acc": 55.0, "ci95": {"low": 45.0, "high": 66.0}}
    fig = plotting.step_counts_figure([3, 4, 4], [2, 2, 3], s_base, s_chunk, 4)
    bars = fig.axes[1].patches
    assert [b.get_height() for b in bars] == [60.0, 55.0]
    assert bars[0].get_facecolor() != bars[1].get_facecolor()
    (line,) = [c for c in fig.axes[1].collections]  # the error bars: one segment per policy, the interval's ends
    assert [tuple(s[:, 1]) for s in line.get_segments()] == [(50.0, 70.0), (45.0, 66.0)]


def test_q_figure_counts_the_chunks_behind_every_point():
    recs = [
        {"q": q, "q0": 0.5, "is_final": i == 2, "chunk_index": i, "traj_correct": ok}
        for ok, qs in ((True, [0.9, 1.0, 1.0]), (False, [0.4, 0.1, 0.0]))
        for i, q in enumerate(qs)
    ]
    recs += [dict(recs[0])]  # a second correct trajectory's first chunk
    fig = plotting.q_figure(recs, 16, True)
    assert len(fig.axes[1].lines) == 3  # correct, wrong, q0
    assert sorted(t.get_text() for t in fig.axes[1].texts) == ["1", "1", "1", "1", "1", "2"]


def test_reset_scatter_draws_the_tables_interval_when_given():
    runs = {
        (lab, "toy", k): {"summary": {"accuracy": acc + k, "rejected_length": 10.0 * k}}
        for lab, acc in (("no judge", 80.0), ("j", 84.0))
        for k in (0, 2)
    }
    seeds = {"no judge": [0, 2], "j": [0, 2]}
    fig = plotting.reset_scatter(runs, ["toy"], seeds, {"no judge": (75.0, 86.0), "j": (79.0, 90.0)})
    segs = [c.get_segments()[0] for c in fig.axes[0].collections]
    assert [tuple(s[:, 1]) for s in segs] == [(75.0, 86.0), (79.0, 90.0)]
    assert "95% interval" in fig.axes[0].get_ylabel()
    plain = plotting.reset_scatter(runs, ["toy"], seeds)
    assert [tuple(c.get_segments()[0][:, 1]) for c in plain.axes[0].collections] == [(80.0, 82.0), (84.0, 86.0)]


def test_sft_loss_figure_plots_the_loss_by_step():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plotting.sft_loss_figure([(1, 2.5), (2, 1.25), (3, 0.75)])
    (ax,) = fig.axes
    (line,) = ax.lines
    assert list(line.get_xdata()) == [1, 2, 3] and list(line.get_ydata()) == [2.5, 1.25, 0.75]
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == (
        "SFT step",
        "loss (completion tokens)",
        "Chunk-policy SFT",
    )
    assert line.get_marker() == "." and tuple(fig.get_size_inches()) == (5.0, 3.0)
    plt.close(fig)
