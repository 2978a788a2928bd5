import json
import re
from pathlib import Path

import pytest

from stepwiser_lib.core import config as C
from stepwiser_lib.core.config import checked_parameters, list_notebooks

CELL = """
PROFILE: str = "tiny"  # scale
N: int = 3  # count
LR: float = 1e-3  # rate
USE: bool = False  # switch
IDS: list[int] = [1, 2]  # ids
"""


def write_profile(d: Path, name: str, text: str) -> None:
    (d / f"{name}.yaml").write_text(text)


def test_parse_parameters_cell():
    p = C.parse_parameters_source(CELL)
    assert list(p) == ["PROFILE", "N", "LR", "USE", "IDS"]
    assert p["N"].type == "int" and p["N"].default == 3 and p["N"].comment == "count"
    assert p["IDS"].type == "list"


@pytest.mark.parametrize(
    "src,msg",
    [
        ("N = 3", "only `NAME: type = literal`"),
        ("N: int = 3.5", "is not a int"),
        ("N: set = 3", "is not one of"),
        ("N: int = len('ab')", "literal"),
    ],
)
def test_parse_parameters_rejects(src, msg):
    with pytest.raises(C.ConfigError, match=msg):
        C.parse_parameters_source(src)


def test_profile_values_checks_keys_and_types(tmp_path):
    decl = C.parse_parameters_source(CELL)
    write_profile(tmp_path, "ok", "shared:\n  N: 5\n  OTHER: 1\nnotebooks:\n  nb:\n    LR: 1\n")
    v = C.profile_values("ok", "nb", decl, tmp_path)
    assert v == {"N": 5, "LR": 1, "PROFILE": "ok"}  # shared keys apply only where declared
    write_profile(tmp_path, "typo", "notebooks:\n  nb:\n    NN: 5\n")
    with pytest.raises(C.ConfigError, match=r"unknown parameter\(s\) \['NN'\]"):
        C.profile_values("typo", "nb", decl, tmp_path)
    write_profile(tmp_path, "badtype", "notebooks:\n  nb:\n    N: '5'\n")
    with pytest.raises(C.ConfigError, match="is not a int"):
        C.profile_values("badtype", "nb", decl, tmp_path)
    write_profile(tmp_path, "boolint", "notebooks:\n  nb:\n    N: true\n")
    with pytest.raises(C.ConfigError, match="is not a int"):
        C.profile_values("boolint", "nb", decl, tmp_path)
    # PyYAML reads 1e-5 (no dot) as a string: caught as a type error, not a silent "1e-5"
    write_profile(tmp_path, "yamlfloat", "notebooks:\n  nb:\n    LR: 1e-5\n")
    with pytest.raises(C.ConfigError, match="is not a float"):
        C.profile_values("yamlfloat", "nb", decl, tmp_path)
    with pytest.raises(C.ConfigError, match="unknown profile 'nope'; valid profiles: .*ok"):
        C.profile_values("nope", "nb", decl, tmp_path)


def test_check_profile_file_rejects_stray_sections(tmp_path):
    decl = {"nb": C.parse_parameters_source(CELL)}
    write_profile(tmp_path, "p1", "notebooks:\n  nb2:\n    N: 1\n")
    with pytest.raises(C.ConfigError, match="unknown notebooks"):
        C.check_profile_file("p1", decl, tmp_path)
    write_profile(tmp_path, "p2", "shared:\n  NOBODY: 1\n")
    with pytest.raises(C.ConfigError, match="declared by no notebook"):
        C.check_profile_file("p2", decl, tmp_path)
    write_profile(tmp_path, "p3", "sharde:\n  N: 1\n")
    with pytest.raises(C.ConfigError, match="unknown top-level keys"):
        C.check_profile_file("p3", decl, tmp_path)


def _ns(**over):
    ns = {"__annotations__": {"PROFILE": "str", "N": "int", "LR": "float"}, "PROFILE": "tiny", "N": 3, "LR": 0.1}
    ns.update(over)
    return ns


def test_resolve_freezes_and_validates(tmp_path):
    write_profile(tmp_path, "tiny", "shared: {}\nnotebooks: {}\n")
    write_profile(tmp_path, "smoke", "notebooks:\n  nb:\n    N: 1\n")
    cfg = C.resolve(_ns(), "nb", tmp_path)
    assert cfg.N == 3 and cfg.as_dict()["LR"] == 0.1
    with pytest.raises(AttributeError, match="frozen"):
        cfg.N = 4
    with pytest.raises(AttributeError, match="no parameter"):
        _ = cfg.MISSING
    assert C.resolve(_ns(PROFILE="smoke"), "nb", tmp_path, verbose=False).N == 1  # profile applied
    with pytest.raises(C.ConfigError, match="unknown parameter"):
        C.resolve(_ns(TYPO=1), "nb", tmp_path)  # e.g. injected by papermill -p TYPO 1
    with pytest.raises(C.ConfigError, match="is not a int"):
        C.resolve(_ns(N="3"), "nb", tmp_path)
    with pytest.raises(C.ConfigError, match="unknown profile"):
        C.resolve(_ns(PROFILE="huge"), "nb", tmp_path)


@pytest.mark.parametrize("profile", C.PROFILES)
def test_shipped_profiles_are_complete_and_valid(profile):
    """Every profile, colab and paper included, validates against every notebook."""
    nbs = list_notebooks()
    assert nbs, "no notebooks found"
    params = checked_parameters(profile, nbs)
    assert set(params) == {p.stem for p in nbs}
    for vals in params.values():
        assert vals["PROFILE"] == profile


def test_paper_profile_uses_paper_models():
    p = checked_parameters("paper", list_notebooks(only=["01"]))["01_self_segmentation"]
    assert p["BASE_MODEL"] == "Qwen/Qwen2.5-1.5B-Instruct"
    assert p["TEACHER"] == "meta-llama/Llama-3.1-70B-Instruct"
    assert (p["SAMPLES_PER_PROBLEM"], p["MAX_CORRECT_PER_PROBLEM"], p["N_PROBLEMS"]) == (16, 4, 20000)
    assert p["SFT_LR"] == 1e-5 and p["SFT_BATCH"] == 32


def test_notebooks_follow_the_skeleton():
    for path in list_notebooks():
        nb = json.loads(path.read_text())
        cells = nb["cells"]
        assert nb["metadata"]["kernelspec"]["name"] == "python3"
        assert cells[0]["cell_type"] == "markdown" and "".join(cells[0]["source"]).startswith("# ")
        tags = [c.get("metadata", {}).get("tags", []) for c in cells]
        i = next(k for k, t in enumerate(tags) if "parameters" in t)
        src = "".join(cells[i]["source"])
        for line in src.strip().splitlines():
            assert "#" in line, f"{path.name}: parameter without a comment: {line}"
        assert "crosscheck.resolve(globals()" in "".join(cells[i + 1]["source"])  # issue 49: the runner's checks too
        assert all(not c.get("outputs") for c in cells if c["cell_type"] == "code"), (
            f"{path.name} is committed with outputs"
        )
        close = _closing_cells(path.name, cells)
        assert any("save_metrics" in "".join(c["source"]) for c in cells[:close]), (
            f"{path.name}: metrics are written before the closing cells"
        )


#: The learner's kit cells (issue 51, tests/test_teaching_kit.py) between the closing cells and "Try this".
KIT_CELLS = ("check-yourself", "further-reading")


def _closing_cells(name: str, cells: list[dict]) -> int:
    """Every notebook ends (issue 19) with: a "What this run shows" heading, a code cell that
    computes this run's numbers, a markdown cell with what it shows / does not show, three "what
    you learned" lines and a link onward, then (issue 51) the learner's kit cells, then a "Try this"
    cell with a rerun command and knobs."""
    src = ["".join(c["source"]) for c in cells]
    kit = sum(c.get("id") in KIT_CELLS for c in cells)
    assert [c.get("id") for c in cells[len(cells) - 1 - kit : -1]] == [c for c in KIT_CELLS][:kit], (
        f"{name}: the kit cells are not just before Try this"
    )
    k = next((i for i, t in enumerate(src) if t.startswith("## What this run shows, and what it does not")), None)
    assert k is not None and k == len(cells) - 4 - kit, f"{name}: the closing cells are not the last four (and the kit)"
    assert cells[k + 1]["cell_type"] == "code"
    text = src[k + 2]
    for part in ("**What it shows.**", "**What it does not show.**", "**What you learned.**"):
        assert part in text, f"{name}: no {part}"
    learned = text.split("**What you learned.**")[1].split("\n\n")[0]
    assert len([ln for ln in learned.splitlines() if ln.startswith("- ")]) == 3, f"{name}: not three lines learned"
    assert re.search(r"\]\((0\d_\w+\.ipynb|\.\./README\.md)\)", text.split("**What you learned.**")[1]), (
        f"{name}: no link onward"
    )
    tries = src[-1]
    assert tries.startswith("## Try this") and f"--only {name[:2]}" in tries, f"{name}: no Try this cell"
    assert len([ln for ln in tries.splitlines() if ln.startswith("| `")]) >= 2, f"{name}: fewer than two knobs"
    return k


def test_every_notebook_links_the_readme_map_and_glossary():
    from stepwiser_lib.core.paths import ROOT

    readme = (ROOT / "README.md").read_text()
    # the glossary lives in docs/glossary.md (issue 51: the README's bytes), linked under the map
    map_section = readme.split("### The pipeline at a glance", 1)[1].split("\n## ", 1)[0]
    assert "](docs/glossary.md)" in map_section and (ROOT / "docs" / "glossary.md").is_file()
    for path in list_notebooks():
        first = "".join(json.loads(path.read_text())["cells"][0]["source"])
        assert "(../README.md#the-pipeline-at-a-glance)" in first, path.name


def test_every_notebook_has_the_colab_badge_and_bootstrap_cell():
    from stepwiser_lib.tools.colab import BOOTSTRAP_SOURCE, badge_markdown

    for path in list_notebooks():
        cells = json.loads(path.read_text())["cells"]
        assert badge_markdown(path.stem) in "".join(cells[0]["source"]), path.name
        assert "".join(cells[1]["source"]) == BOOTSTRAP_SOURCE, f"{path.name}: bootstrap cell differs"
        assert "bootstrap" in cells[1]["metadata"]["tags"]
        assert cells[1]["metadata"]["jupyter"]["source_hidden"], f"{path.name}: bootstrap cell not collapsed"
    exec(compile(BOOTSTRAP_SOURCE, "bootstrap", "exec"), {})  # off Colab it is a no-op


#: Parameters that act only when another is set (the real-model profiles may leave them at tiny's value).
ONLY_WHEN = {
    "ADAPTIVE_RULE": ("ADAPTIVE", True),
    "ADAPTIVE_ROUND": ("ADAPTIVE", True),
    "ADAPTIVE_Z": ("ADAPTIVE", True),
    "WARMUP_STEPS": ("WARMUP", True),  # the toy judges' format warm-up: off for instruct models
    "WARMUP_PROBLEMS": ("WARMUP", True),
}


@pytest.mark.parametrize("profile", ["colab", "paper"])
def test_real_model_profiles_set_every_value_chosen_for_tiny(profile):
    """A parameter whose comment gives its tiny-scale reason ("tiny: ...") was chosen for the toy
    world; a real-model profile that inherits it runs at the wrong scale without a word (the paper
    profile trained its judges on 40% of the labels: tiny's DEV_FRACTION and TEST_FRACTION). Each must be set by the profile, unless the switch it needs is off."""

    data = C.load_profile(profile)
    missing = []
    for nb in C.list_notebooks():
        decl = C.notebook_parameters(nb)
        vals = {
            **{k: v.default for k, v in decl.items()},
            **{k: v for k, v in data["shared"].items() if k in decl},
            **data["notebooks"].get(nb.stem, {}),
        }
        own = set(data["notebooks"].get(nb.stem, {})) | set(data["shared"])
        for k, p in decl.items():
            if "tiny:" in p.comment.lower() and k not in own:
                switch = ONLY_WHEN.get(k)
                if switch is None or vals.get(switch[0]) == switch[1]:
                    missing.append(f"{nb.stem}.{k}")
    assert not missing, f"{profile} inherits tiny's value of {missing}"


def test_the_config_echo_says_what_the_profile_changed_not_every_value():
    """Issue 36: the echo under the parameters cell repeated it (up to 53 lines); it now names the changes."""
    cfg = C.Config("04_judge_grpo", {"PROFILE": "x", "A": 1, "B": [1, 2]}, {"PROFILE": "tiny", "A": 1, "B": []})
    assert cfg.changed() == {"B": [1, 2]}
    assert repr(cfg).splitlines() == [
        "Config(04_judge_grpo): 3 parameters checked against their declared types and "
        "ranges, profile 'x'; these 1 differ from the parameters cell:",
        "  B = [1, 2]",
    ]
    same = C.Config("n", {"PROFILE": "tiny", "A": 1}, {"PROFILE": "tiny", "A": 1})
    assert repr(same).endswith("every value is the parameters cell's") and "\n" not in repr(same)
    assert C.Config("n", {"PROFILE": "p", "A": 1}).changed() == {"A": 1}  # defaults unknown: every value


def test_a_constraint_lives_at_the_start_of_the_comment():
    """Issue 37: papermill's inspection reads a plain type, so what a parameter allows moved from a
    quoted annotation ("int in [1, inf)") to the start of its comment, where `--help-notebook` shows it."""
    assert C.spec_text("int", "in [1, inf); shards per worker") == ("int in [1, inf)", "shards per worker")
    assert C.spec_text("float", "in (0, 1]") == ("float in (0, 1]", "")
    assert C.spec_text("str", "in {toy, paper}; which prompts") == ("str in {toy, paper}", "which prompts")
    assert C.spec_text("list[str]", "each in {toy, math500}; tasks") == ("list[str in {toy, math500}]", "tasks")
    assert C.spec_text("'list[judge]'", "judges of notebook 04") == ("list[judge]", "judges of notebook 04")
    assert C.spec_text("str", "index into the list; in words") == (
        "str",
        "index into the list; in words",
    )  # no constraint
    with pytest.raises(C.ConfigError, match="needs a list"):
        C.spec_text("int", "each in {1, 2}; x")
    p = C.parse_parameters_source("N: int = 0  # in [1, inf); count\n".replace("= 0", "= 2"))
    assert (p["N"].spec.text, p["N"].comment) == ("int in [1, inf)", "count")
    with pytest.raises(C.ConfigError, match=r"in \[1, inf\)"):
        C.parse_parameters_source("N: int = 0  # in [1, inf); count")


def test_papermill_sees_every_parameter_with_what_it_allows():
    """`papermill --help-notebook` lists every parameter of every notebook (it saw 43 of 193 when
    the constraints were in quoted annotations), and its help starts with the constraint."""
    import papermill

    for path in list_notebooks():
        seen = papermill.inspect_notebook(str(path))
        decl = C.notebook_parameters(path)
        assert list(seen) == list(decl), path.name
        for name, p in decl.items():
            t = p.spec.text
            if " in " in t:  # "int in [1, inf)" -> "in [1, inf)"; "list[str in {a}]" -> "each in {a}"
                want = "each " + t[t.index(" in ") + 1 : -1] if t.startswith("list[") else t.split(" ", 1)[1]
                assert seen[name]["help"].startswith(want), (path.name, name)


def test_a_value_set_for_this_run_wins_and_the_runners_checks_run_in_the_notebook_PF01_PF03_RT01(tmp_path, capsys):
    """Issue 49 (reliability review 3): PF01, ``papermill -p SEED 3`` (or an edited cell) was replaced
    by the profile's value, the message calling it the cell's, and ``-p SEED abc`` never reported;
    PF03, a seed of 2**32 passed --check and failed after notebook 01 sampled; RT01, the settings
    that must fit together were checked by the runner only, not in a notebook run on its own."""
    from stepwiser_lib.tools import crosscheck

    def cell_ns(nb, **over):  # a kernel's globals after the parameters cell (and papermill's values)
        params = C.notebook_parameters(C.NOTEBOOKS_DIR / f"{nb}.ipynb")
        ns = {"__annotations__": {k: p.type for k, p in params.items()}}
        ns.update({k: p.default for k, p in params.items()})
        ns.update(over)
        return ns

    nb = "03_balancing"
    cfg = C.resolve(cell_ns(nb, PROFILE="smoke", SEED=3), nb)
    assert cfg.SEED == 3 and cfg.DEV_FRACTION == 0.25  # set for this run: kept over smoke's SEED 0; the rest smoke's
    out = capsys.readouterr().out
    assert "SEED = 3, set for this run (profile smoke has 0; the saved cell 0)" in out
    with pytest.raises(C.ConfigError, match="SEED = 'abc' is not a int"):
        C.resolve(cell_ns(nb, PROFILE="smoke", SEED="abc"), nb)
    with pytest.raises(C.ConfigError, match=r"SEED = 4294967296 .*4294967295"):
        C.resolve(cell_ns(nb, PROFILE="smoke", SEED=2**32), nb)
    # RT01: notebook 04 run alone with a micro-batch that does not divide its batch stops in its config cell
    ns = cell_ns("04_judge_grpo", PROFILE="tiny", WARMUP_BATCH=12, WARMUP_MICRO_BATCH=8)
    with pytest.raises(
        C.ConfigError, match="04_judge_grpo: per-device batch / WARMUP_MICRO_BATCH: 12 is not divisible by 8"
    ):
        crosscheck.resolve(ns, "04_judge_grpo", verbose=False)


def test_a_profile_not_saved_as_utf8_is_named_PF02(tmp_path):
    """Issue 49 (reliability review 3, PF02): a profile saved in Latin-1 ended in a 26-line traceback."""
    (tmp_path / "latin.yaml").write_bytes("description: café run\nshared: {}\nnotebooks: {}\n".encode("latin-1"))
    with pytest.raises(C.ConfigError, match=r"latin.yaml: not UTF-8 \(byte 0xe9 at offset 16\)"):
        C.load_profile("latin", tmp_path)
