import json

import nbformat
import pytest

from stepwiser_lib import runner


def _nb(path, body):
    nb = nbformat.v4.new_notebook()
    nb.metadata = {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}}
    p = nbformat.v4.new_code_cell('PROFILE: str = "tiny"  # scale\nX: int = 1  # value')
    p.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# t"), p, nbformat.v4.new_code_cell(body)]
    nbformat.write(nb, path)


@pytest.fixture
def setup(tmp_path):
    nbd, prof, out = tmp_path / "nbs", tmp_path / "profiles", tmp_path / "out"
    nbd.mkdir(), prof.mkdir()
    (prof / "smoke.yaml").write_text("notebooks:\n  01_ok:\n    X: 5\n")
    _nb(nbd / "01_ok.ipynb", "assert X == 5, X\nprint('fine')")
    return nbd, prof, out


def test_runner_executes_with_profile_values(setup):
    nbd, prof, out = setup
    t = runner.run("smoke", notebooks_dir=nbd, out_dir=out, profiles_dir=prof)
    assert set(t) == {"01_ok"}
    done = json.loads((out / "01_ok.ipynb").read_text())
    assert any("fine" in "".join(o.get("text", "")) for c in done["cells"] for o in c.get("outputs", []))
    assert json.loads((out / "timings.json").read_text())["01_ok"] >= 0


def test_runner_names_the_failing_cell(setup):
    nbd, prof, out = setup
    _nb(nbd / "02_bad.ipynb", "raise ValueError('boom in stage two')")
    with pytest.raises(RuntimeError, match=r"02_bad.ipynb failed at cell 3 .*ValueError: boom in stage two"):
        runner.run("smoke", notebooks_dir=nbd, out_dir=out, profiles_dir=prof)


def test_runner_rejects_bad_profiles_before_any_kernel(setup, capsys):
    nbd, prof, out = setup
    (prof / "typo.yaml").write_text("notebooks:\n  01_ok:\n    XX: 5\n")
    with pytest.raises(runner.ConfigError, match="XX"):
        runner.run("typo", notebooks_dir=nbd, out_dir=out, profiles_dir=prof)
    assert not out.exists()  # nothing ran
    with pytest.raises(runner.ConfigError, match="valid profiles"):
        runner.run("missing", notebooks_dir=nbd, out_dir=out, profiles_dir=prof)
    with pytest.raises(runner.ConfigError, match="no notebook matches"):
        runner.run("smoke", only=["09"], notebooks_dir=nbd, out_dir=out, profiles_dir=prof)


def test_cli_exit_codes():
    assert runner.main(["--profile", "nope"]) == 2
    assert runner.main(["--profile", "paper", "--check"]) == 0
