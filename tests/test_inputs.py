"""Each notebook's input check (in its config cell) fires with a message naming the notebook
to run first and the profile, executed from the committed cells against an empty output folder."""

import json

import pytest

from stepwiser_lib.core import config, inputs, paths

NOTEBOOKS = paths.NOTEBOOKS_DIR


def first_cells(stem: str, profile: str = "smoke", **overrides) -> dict:
    """Run a notebook's bootstrap, parameters, config and input-check cells as papermill would
    (the profile and ``overrides`` injected after the parameters cell); returns the namespace."""
    cells = json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text())["cells"]
    k = next(i for i, c in enumerate(cells) if "inputs" in c["metadata"].get("tags", []))
    assert "inputs.check(cfg)" in "".join(cells[k]["source"]) and "crosscheck.resolve" in "".join(cells[k]["source"])
    ns: dict = {}
    for c in cells[1 : k + 1]:
        exec(compile("".join(c["source"]), stem, "exec"), ns)
        if "parameters" in c["metadata"].get("tags", []):
            ns.update(PROFILE=profile, **overrides)
    return ns


@pytest.fixture
def empty_outputs(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.OUTPUT_ROOT_ENV, str(tmp_path))
    return tmp_path


# notebook -> the chain its message must name, from an empty output folder (each chain starts at 01)
FIRST = {
    "02_rollout_labelling": "then this one",
    "03_balancing": "then 02_rollout_labelling, then this one",
    "04_judge_grpo": "then 02_rollout_labelling, 03_balancing, then this one",
    "05_processbench": "then 02_rollout_labelling, 03_balancing, 04_judge_grpo, then this one",
    "06_chunk_reset": "then 02_rollout_labelling, 03_balancing, 04_judge_grpo, then this one",
    "07_rsft": "then 02_rollout_labelling, 03_balancing, 04_judge_grpo, then this one",
}


@pytest.mark.parametrize("stem", sorted(FIRST))
@pytest.mark.parametrize("profile", ["smoke", "colab"])
def test_every_notebook_names_the_notebook_to_run_first(stem, profile, empty_outputs):
    with pytest.raises(inputs.MissingInputs) as e:
        first_cells(stem, profile)
    msg = str(e.value)
    assert msg.startswith(f"{stem} cannot start at profile {profile!r}")
    assert f"Run notebook 01_self_segmentation.ipynb first, at PROFILE = {profile!r}, {FIRST[stem]}" in msg
    assert f"make reproduce PROFILE={profile}" in msg and "data/README.md" in msg
    assert f"runs/{profile}/artifacts/" in msg and str(empty_outputs) in msg  # where it looked


def test_notebook_01_needs_nothing_from_earlier_notebooks(empty_outputs, capsys):
    first_cells("01_self_segmentation")
    assert "input ok: data/toy_base (the toy base model" in capsys.readouterr().out
    with pytest.raises(inputs.MissingInputs, match="BASE_MODEL names a local folder"):
        first_cells("01_self_segmentation", BASE_MODEL=str(empty_outputs / "no_model"))


def test_the_chain_to_run_skips_what_is_there(empty_outputs):
    """07 with notebook 01's chunk policy on disk: run 02, 03, 04, not 01 and not 05 or 06."""
    model = empty_outputs / "runs/smoke/artifacts/01_self_segmentation/chunk_policy/model"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    with pytest.raises(
        inputs.MissingInputs, match="chunk_policy/model: the chunk policy .* \\(incomplete: config or weights missing"
    ):
        first_cells("07_rsft")  # a model folder without weights: notebook 01 stopped while saving
    (model / "model.safetensors").write_bytes(b"weights")
    with pytest.raises(inputs.MissingInputs) as e:
        first_cells("07_rsft")
    assert (
        "Run notebook 02_rollout_labelling.ipynb first, at PROFILE = 'smoke', then 03_balancing, "
        "04_judge_grpo, then this one"
    ) in str(e.value)
    assert "chunk_policy" not in str(e.value).split("missing:")[1].split("Run")[0]


def test_what_is_needed_follows_the_config(empty_outputs):
    def cfg(stem, **values):
        decl = config.notebook_parameters(NOTEBOOKS / f"{stem}.ipynb")
        return config.Config(stem, {**{k: d.default for k, d in decl.items()}, "PROFILE": "smoke", **values})

    assert inputs.needs("02_rollout_labelling", cfg("02_rollout_labelling", POLICY_MODEL="Qwen/Qwen2.5-1.5B")) == []
    rules = {
        n.path.parent.name
        for n in inputs.needs(
            "04_judge_grpo",
            cfg("04_judge_grpo", VARIANTS=["stepwiser:abs_q", "disc_sft:rel_ratio"], JUDGE_INIT="Qwen/Qwen2.5-1.5B"),
        )
    }
    assert rules == {"abs_q", "rel_ratio"}
    # a registry whose judge folder is gone (a partial copy of runs/) names that judge
    reg = empty_outputs / "runs/smoke/artifacts/04_judge_grpo/judges.json"
    reg.parent.mkdir(parents=True)
    reg.write_text(
        json.dumps(
            [
                {
                    "name": "stepwiser:rel_ratio",
                    "base": "Qwen/Qwen2.5-1.5B",
                    "adapter": str(reg.parent / "stepwiser__rel_ratio" / "adapter"),
                }
            ]
        )
    )
    with pytest.raises(
        inputs.MissingInputs, match=r"judge 'stepwiser:rel_ratio' \(adapter\); written by 04_judge_grpo"
    ):
        inputs.check(cfg("05_processbench"))
    with pytest.raises(ValueError, match="unknown notebook"):
        inputs.needs("08_nope", cfg("05_processbench"))


def test_every_notebook_states_its_inputs_at_the_top():
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        top = "".join(json.loads(path.read_text())["cells"][0]["source"])
        assert "| reads | writes |" in top and "**Inputs.**" in top, path.name
    assert set(inputs.STAGES) == {p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")}
    assert set(inputs.UPSTREAM) | {inputs.STAGES[0]} == set(inputs.STAGES)


def test_ok_lines_give_one_line_per_earlier_notebook_folder(empty_outputs):
    art = empty_outputs / "runs/tiny/artifacts"
    want = [
        inputs.Need(art / "01_self_segmentation/chunk_policy/model", "01", "the chunk policy", "s"),
        inputs.Need(art / "04_judge_grpo/judges.json", "04", "the judge registry", "s"),
        inputs.Need(art / "04_judge_grpo/disc/model", "04", "judge 'disc'", "s"),
    ]
    assert inputs.ok_lines(want) == [
        "input ok: runs/tiny/artifacts/01_self_segmentation/chunk_policy/model (the chunk policy)",
        "input ok: 2 paths in runs/tiny/artifacts/04_judge_grpo/: judges.json, disc/model",
    ]
