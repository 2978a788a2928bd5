"""Run the numbered notebooks headless with papermill at one profile.

    python -m stepwiser_lib.tools.runner --profile tiny             # every notebook, in order
    python -m stepwiser_lib.tools.runner --profile smoke --only 01  # one stage
    python -m stepwiser_lib.tools.runner --profile paper --check    # validate only, start no kernel
    python -m stepwiser_lib.tools.runner --profile paper --dry-run  # validate and print the plan

Before any kernel starts, every profile key is checked against the parameters each notebook
declares (unknown key, wrong type, unknown notebook section or profile: a clear error, exit 2).
Executed notebooks go to ``runs/<profile>/``; a failing notebook stops the run and names the
notebook, the cell and the error (exit 1). Per-notebook times go to ``runs/<profile>/timings.json``
and, after a run of every notebook, to ``results/<profile>/run_times.json`` (with whether it
started from scratch), which the run-time table of docs/results_tiny.md is generated from.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

from ..core import paths
from ..core.config import ConfigError, checked_parameters, list_notebooks, notebook_parameters, with_defaults
from ..core.io import write_json
from ..core.paths import NOTEBOOKS_DIR, PROFILES_DIR, ROOT, results_dir, run_dir
from . import crosscheck
from .plan import dry_run as make_plan
from .plan import render


class _InferenceNoise:
    """Drops papermill's guesses about the parameters cell. Papermill re-reads the cell with a
    regex that knows plain annotations only (``N: int = 1``), so every constrained one
    (``N: "int in [1, inf)" = 1``, :mod:`stepwiser_lib.core.checks`) would log "Passed unknown
    parameter: N" although the runner has already checked each name, type and value itself."""

    def filter(self, record) -> bool:
        msg = record.getMessage()
        return not (msg.startswith("Passed unknown parameter") or msg.startswith("Unable to parse line"))


def _quiet_papermill_inference() -> None:
    log = logging.getLogger("papermill")
    if not any(isinstance(f, _InferenceNoise) for f in log.filters):
        log.addFilter(_InferenceNoise())


def read_timings(path: Path) -> dict:
    """``runs/<profile>/timings.json`` (seconds per notebook of the latest runs), or ``{}`` when it
    is missing or damaged (a run killed while writing it, before writes were atomic): the times
    are a record, not an input, so a damaged file is replaced with a warning, never fatal."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
        if isinstance(data, dict):
            return data
    except (json.JSONDecodeError, UnicodeDecodeError):
        pass
    warnings.warn(
        f"{path} is damaged (not a JSON object of seconds per notebook); it is rewritten from this run's times",
        stacklevel=2,
    )
    return {}


def _writable(folders: list[Path]) -> None:
    """Fail with a :class:`ConfigError` naming the folder unless each of ``folders`` can be written
    (its nearest existing folder takes a file; a read-only or full disk, a file in the way): before
    any kernel starts, so no stage spends its compute first. Nothing
    is left behind."""
    for d in folders:
        here = d
        while not here.exists() and here.parent != here:
            here = here.parent
        try:
            if not here.is_dir():
                raise NotADirectoryError(20, f"{here} is a file, not a folder")
            with tempfile.NamedTemporaryFile(dir=here, prefix=".write-check."):
                pass
        except OSError as e:
            raise ConfigError(
                f"cannot write to {d}: {e.strerror or e}; free or fix that folder, or point "
                f"${paths.OUTPUT_ROOT_ENV} at a writable one"
            ) from None


def _kernel_manager(log):
    """The kernel manager papermill starts each notebook's kernel with: the kernel *process*
    writes its own log (not cell output, which travels to the executed notebook) to ``log``
    (``runs/<profile>/kernel.log``), so a Ctrl-C leaves the runner's one line and not the
    kernel's traceback of a socket the runner has closed."""
    from jupyter_client.manager import AsyncKernelManager

    class LoggedKernelManager(AsyncKernelManager):
        async def start_kernel(self, **kw):
            kw.setdefault("stdout", log)
            kw.setdefault("stderr", log)
            return await AsyncKernelManager._async_start_kernel(self, **kw)

    return LoggedKernelManager


def _into_place(running: Path, dest: Path) -> None:
    """The executed notebook, moved from this process's scratch name to ``dest`` (one rename)."""
    if running.exists():
        os.replace(running, dest)


def _failure(nb_path: Path) -> str:
    """The failing cell of an executed notebook: its number in the source notebook (1-based,
    papermill's injected cells not counted), first line and error."""
    try:
        nb = json.loads(Path(nb_path).read_text())
    except Exception:  # noqa: BLE001 - best effort in an error path
        return ""
    skip = {"injected-parameters", "papermill-error-cell-tag"}
    cells = [c for c in nb.get("cells", []) if not skip & set(c.get("metadata", {}).get("tags", []))]
    for i, c in enumerate(cells, 1):
        for o in c.get("outputs", []) if c.get("cell_type") == "code" else []:
            if o.get("output_type") == "error":
                src = "".join(c.get("source", [])).strip().splitlines()
                head = src[0] if src else ""
                return f"cell {i} of {len(cells)} ({head[:70]!r}): {o.get('ename')}: {o.get('evalue')}"
    return ""


#: The stages whose worker CLIs :func:`run` starts side by side on a CPU machine (``cpu_workers``):
#: labelling (02; ``results/bench/labelling_scaling.json``). Notebook 05 judges side by side itself
#: (its ``PROCESSES``). Not 06 or 07: their workers then the notebook's join were no faster than
#: the notebook alone on tiny (LAB_LOG.md, "Budgets").
CPU_WORKER_STAGES = ("02",)


def _side_by_side(profile: str, stem: str, values: dict, cpu_workers: int) -> None:
    """Run ``stem``'s worker CLI in ``cpu_workers`` processes first, where that pays: a stage of
    :data:`CPU_WORKER_STAGES` on a machine without a GPU, on the HF backend (a vLLM engine per
    process would each reserve its own memory). A worker that fails costs nothing but time: the
    notebook computes whatever is not on disk."""
    stage = stem[:2]
    if cpu_workers <= 1 or stage not in CPU_WORKER_STAGES:
        return
    if any(values.get(k) == "vllm" for k in ("BACKEND", "JUDGE_BACKEND")):
        return
    from . import workers  # lazy: only a run with CPU workers needs it (visible_gpus imports torch)

    if workers.visible_gpus():
        return
    print(f"[runner] {stem}: {cpu_workers} side-by-side workers first (CPU_WORKERS)", flush=True)
    if workers.run_workers(profile, cpu_workers, stage=stage):
        print(f"[runner] {stem}: a worker failed (above); the notebook computes what is missing", flush=True)


def run(
    profile: str,
    only: list[str] | None = None,
    check_only: bool = False,
    notebooks_dir: Path = NOTEBOOKS_DIR,
    out_dir: Path | None = None,
    profiles_dir: Path = PROFILES_DIR,
    log_output: bool = False,
    dry_run: bool = False,
    overrides: dict | None = None,
    record: bool | None = None,
    cpu_workers: int = 1,
) -> dict[str, float]:
    """Run (or check, or plan) the notebooks at ``profile``; ``overrides`` set parameters on top
    of the profile in every selected notebook that declares them (``make gpu-check``'s backend
    and data paths), type-checked like profile values. ``record``: write the run times to
    ``results/<profile>/run_times.json`` (default: for a run of every shipped notebook).
    ``cpu_workers`` > 1 (``make reproduce``'s ``CPU_WORKERS``, a machine without a GPU): before the
    notebooks of :data:`CPU_WORKER_STAGES`, that many side-by-side worker processes of the stage
    (:func:`stepwiser_lib.tools.workers.run_workers`) compute its shards, which the notebook then
    joins (the same numbers: the workers' tests); their time counts in the notebook's."""
    notebooks = list_notebooks(notebooks_dir, only)
    if not notebooks:
        raise ConfigError(f"no notebooks in {notebooks_dir}")
    params = checked_parameters(profile, notebooks, profiles_dir)
    every = list_notebooks(Path(notebooks_dir))  # notebooks that run later must fit too (--only 03 then 04)
    crosscheck.check(with_defaults(every, checked_parameters(profile, every, profiles_dir)))
    paths.pin_output_root()  # one absolute output root for this process and its kernels
    for nb in notebooks:
        decl = notebook_parameters(nb)
        for k, v in (overrides or {}).items():
            if k in decl:
                why = decl[k].problem(v)
                if why:
                    raise ConfigError(f"{nb.stem}: override {k} = {v!r} {why}")
                params[nb.stem][k] = v
    print(f"[runner] profile {profile}: {len(notebooks)} notebook(s), parameters checked", flush=True)
    missing = crosscheck.missing_data_files(with_defaults(notebooks, params))
    if dry_run:
        p = make_plan(profile, with_defaults(notebooks, params))
        print(render(p), flush=True)
        if missing:
            raise ConfigError("data file(s) not there:\n  " + "\n  ".join(missing))
        bad = [m["model"] for m in p["models"] if not m["ok"]]
        if bad:
            raise ConfigError(f"invalid model reference(s): {bad}")
        over = [r for r in p["memory"]["rows"] if not r["fits"]]
        if over:
            raise ConfigError(
                "estimated not to fit on "
                + p["memory"]["gpu"]
                + ": "
                + "; ".join(f"{r['stage']} / {r['phase']}: {r['detail']}; change {r['change']}" for r in over)
            )
        return {}
    if check_only:
        for nb, vals in params.items():
            print(f"  {nb}: {json.dumps(vals, sort_keys=True)}")
        return {}
    if missing:  # before any kernel starts, not when the stage that reads them is reached
        raise ConfigError("data file(s) not there:\n  " + "\n  ".join(missing))
    out = Path(out_dir or run_dir(profile))
    _writable(
        [out, paths.output_root() / "results" / profile, paths.output_root() / "figures" / profile]
    )  # a folder the run cannot write fails now, not after a stage
    import papermill as pm

    _quiet_papermill_inference()

    # from scratch: nothing on disk a notebook could resume from
    fresh = not (out / "artifacts").exists() or not any((out / "artifacts").iterdir())
    out.mkdir(parents=True, exist_ok=True)
    timings: dict[str, float] = {}
    tpath = out / "timings.json"
    for nb in notebooks:
        dest = out / nb.name
        print(
            f"[runner] {nb.stem} ({profile}) -> {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}",
            flush=True,
        )
        t0 = time.time()
        # (not under overrides: the workers read the profile alone)
        _side_by_side(
            profile, nb.stem, with_defaults([nb], {nb.stem: params[nb.stem]})[nb.stem], 1 if overrides else cpu_workers
        )
        # papermill rewrites its output as cells run, with plain writes: into a file of this process,
        # moved into place whatever happens, so two runs at once never interleave one file
        running = out / f".{nb.stem}.{os.getpid()}.running.ipynb"
        try:
            with open(out / "kernel.log", "ab") as log:
                pm.execute_notebook(
                    str(nb),
                    str(running),
                    parameters=params[nb.stem],
                    kernel_name="python3",
                    cwd=str(ROOT),
                    progress_bar=False,
                    log_output=log_output,
                    kernel_manager_class=_kernel_manager(log),
                )
        except KeyboardInterrupt:
            raise KeyboardInterrupt(nb.name) from None
        except pm.PapermillExecutionError as e:
            _into_place(running, dest)
            where = _failure(dest) or f"cell {e.exec_count}: {e.ename}: {e.evalue}"
            raise RuntimeError(f"notebook {nb.name} failed at {where}\n  full traceback in {dest}") from None
        except Exception as e:  # the kernel died (out of memory, killed): its own log says why
            raise RuntimeError(
                f"notebook {nb.name} stopped: {type(e).__name__}: {e}\n  the kernel's log: {out / 'kernel.log'}"
            ) from e
        finally:
            _into_place(running, dest)
        timings[nb.stem] = round(time.time() - t0, 1)
        print(f"[runner] {nb.stem} done in {timings[nb.stem]:.0f} s", flush=True)
        old = read_timings(tpath)
        old.update(timings)
        write_json(tpath, old)
    if record if record is not None else (not only and out_dir is None and notebooks_dir == NOTEBOOKS_DIR):
        # a full run of the shipped notebooks: its times are a result (the run-time table of docs/results_tiny.md)
        write_json(
            results_dir(profile) / "run_times.json", {"notebooks": timings, "cpus": os.cpu_count(), "fresh": fresh}
        )
    if out_dir is None and notebooks_dir == NOTEBOOKS_DIR and any(results_dir(profile).glob("*_predictions.jsonl")):
        from ..evals import claims  # lazy: numpy, only after a run that wrote predictions

        t0 = time.time()
        doc = claims.write(results_dir(profile), profile)  # the claims table, from every predictions file there
        print(f"[runner] claims.json: {len(doc['claims'])} claims in {time.time() - t0:.0f} s", flush=True)
    return timings


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Run the StepWiser companion notebooks with papermill.")
    ap.add_argument("--profile", default="tiny")
    ap.add_argument("--only", nargs="*", help="notebook number prefixes, e.g. 01 02")
    ap.add_argument("--check", action="store_true", help="validate the profile and stop")
    ap.add_argument("--log-output", action="store_true", help="stream cell output to the terminal")
    ap.add_argument(
        "--dry-run",
        action="store_true",
        help="validate, resolve models and datasets without downloading, print the plan",
    )
    ap.add_argument(
        "--cpu-workers",
        type=int,
        default=1,
        help="on a machine without a GPU: run stage 02's worker CLI (labelling) in this many side-by-side "
        "processes before its notebook (make reproduce: CPU_WORKERS, 2)",
    )
    a = ap.parse_args(argv)
    try:
        t = run(a.profile, a.only, a.check, log_output=a.log_output, dry_run=a.dry_run, cpu_workers=a.cpu_workers)
    except ConfigError as e:
        print(f"[runner] configuration error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        print(f"[runner] FAILED: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as e:
        print(
            f"[runner] interrupted{' in ' + e.args[0] if e.args else ''}; the next run resumes from what "
            f"is on disk (runs/{a.profile}/artifacts)",
            file=sys.stderr,
        )
        return 130
    if t:
        print(f"[runner] all done: {sum(t.values()):.0f} s in total", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
