"""Profiles and notebook parameters: one checked, frozen config per notebook run.

Every notebook has one papermill ``parameters`` cell of typed literals::

    N_PROBLEMS: int = 300  # prompts sampled for SFT data; tiny scale

and the next cell calls :func:`resolve`, which

* collects exactly the names annotated in that cell (``__annotations__`` of the kernel),
* applies the profile named by ``PROFILE`` (``configs/profiles/<PROFILE>.yaml``: a ``shared``
  section plus one section per notebook, holding only values that differ from the cell),
* checks every value against its declared type, rejects unknown names, and
* returns a frozen :class:`Config`.

The runner (:mod:`stepwiser_lib.tools.runner`) performs the same checks on the notebook file *before*
a kernel starts, so a typo in a profile fails in a second, not after ten minutes of compute.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from .checks import ConfigError, Spec, parse, problem
from .checks import type_ok as _type_ok
from .paths import NOTEBOOKS_DIR, PROFILES_DIR

#: The shipped profiles (tests check each; any other valid ``configs/profiles/*.yaml`` works too).
PROFILES = ("smoke", "colab-smoke", "real-smoke", "real-smoke-vllm", "tiny", "toy-full", "colab", "paper")


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # the base type, one of checks.TYPES: "int", "list", ...
    default: Any
    comment: str
    spec: Spec | None = None  # what is allowed (stepwiser_lib.core.checks); None: any value of the type

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is not allowed for this parameter (None if it is)."""
        return problem(value, self.spec or parse(self.type))


def _annotation_text(annotation: Any) -> str:
    """The text of a runtime annotation: ``"int in [1, inf)"`` as written, ``int`` -> "int",
    ``list[str]`` -> "list[str]"."""
    if isinstance(annotation, str):
        return annotation
    return annotation.__name__ if isinstance(annotation, type) else str(annotation)


def _param(name: str, annotation: str, default: Any = None, comment: str = "") -> Param:
    spec = parse(annotation)
    return Param(name, spec.base, default, comment, spec)


def type_ok(value: Any, type_name: str) -> bool:
    return _type_ok(value, type_name)


#: What a parameter allows, at the start of its trailing comment, before ``;``: an interval or a
#: set of choices (``in [1, inf)``, ``in {toy, paper}``), or the same for each element of a list
#: (``each in {toy, math500}``; ``each variant`` and ``each judge`` for judge names). The annotation stays a plain type (``int``, ``list[str]``) that
#: papermill's parameter inspection reads (``papermill --help-notebook`` lists every parameter, with
#: what it allows as the start of its help); :func:`stepwiser_lib.core.checks.parse` reads both.
CONSTRAINT = re.compile(
    r"^(each\s+)?(in\s*(?:[\[(][^\])]*[\])]|\{[^}]*\})|(?<=each )variant|(?<=each )judge)\s*(?:;\s*|$)"
)


def spec_text(annotation: str, comment: str) -> tuple[str, str]:
    """(the :mod:`~stepwiser_lib.core.checks` spec, the help text) of one parameter from its
    annotation and trailing comment: ``int`` and ``"in [1, inf); shards"`` give ``"int in [1, inf)"``
    and ``"shards"``; ``list[str]`` and ``"each in {a, b}; x"`` give ``"list[str in {a, b}]"``."""
    ann = annotation.strip().strip("'\"").strip()
    m = CONSTRAINT.match(comment)
    if not m:
        return ann, comment
    rest = comment[m.end() :].strip()
    if m.group(1):
        inner = re.fullmatch(r"list\[(\w+)\]", ann)
        if not inner:
            raise ConfigError(f"`each {m.group(2)}` needs a list[TYPE] annotation, not {ann!r}")
        if m.group(2) in ("variant", "judge"):  # a named element kind (checks.NAMED): a str with its own check
            return f"list[{m.group(2)}]", rest
        return f"list[{inner.group(1)} {m.group(2)}]", rest
    return f"{ann} {m.group(2)}", rest


def parse_parameters_source(source: str) -> dict[str, Param]:
    """Declared parameters of a parameters cell: ``NAME: type = literal  # [constraint; ]comment``
    lines (:data:`CONSTRAINT`)."""
    tree = ast.parse(source)
    lines = source.splitlines()
    out: dict[str, Param] = {}
    for node in tree.body:
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            raise ConfigError(f"parameters cell line {node.lineno}: only `NAME: type = literal` lines are allowed")
        name = node.target.id
        if node.value is None:
            raise ConfigError(f"parameter {name} has no default value")
        try:
            default = ast.literal_eval(node.value)
        except ValueError as e:
            raise ConfigError(f"parameter {name}: the default must be a literal") from e
        line = lines[node.lineno - 1]
        comment = line.split("#", 1)[1].strip() if "#" in line else ""
        spec, comment = spec_text(ast.unparse(node.annotation), comment)
        param = _param(name, spec, default, comment)
        why = param.problem(default)
        if why:
            raise ConfigError(f"parameter {name}: default {default!r} {why}")
        out[name] = param
    return out


def notebook_parameters(path: str | Path) -> dict[str, Param]:
    """The parameters declared in the cell tagged ``parameters`` of a notebook file."""
    nb = json.loads(Path(path).read_text())
    cells = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    if len(cells) != 1:
        raise ConfigError(f"{path}: expected exactly one cell tagged 'parameters', found {len(cells)}")
    src = cells[0]["source"]
    return parse_parameters_source("".join(src) if isinstance(src, list) else src)


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, but a key given twice in one mapping is an error: plain YAML keeps
    the last one silently, so an edited profile could lose a value without a word."""


def _unique_mapping(loader, node, deep=False):
    seen = set()
    for k, _ in node.value:
        key = loader.construct_object(k, deep=deep)
        if key in seen:
            raise ConfigError(f"line {k.start_mark.line + 1}: {key!r} is given twice")
        seen.add(key)
    return loader.construct_mapping(node, deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


#: A profile name: a file ``configs/profiles/<name>.yaml``, letters, digits, ``-`` and ``_`` only
#: (no path: ``--profile ../x`` must not read a file elsewhere or write ``runs/../x``).
PROFILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*")


def profile_names(profiles_dir: Path = PROFILES_DIR) -> list[str]:
    """The valid profiles: every ``*.yaml`` of the profiles folder with a valid name. The runner,
    the labelling CLI and the notebooks all use this one rule."""
    return sorted(p.stem for p in Path(profiles_dir).glob("*.yaml") if PROFILE_NAME.fullmatch(p.stem))


def check_profile_name(profile: Any, profiles_dir: Path = PROFILES_DIR) -> str:
    valid = profile_names(profiles_dir)
    if not isinstance(profile, str) or profile not in valid:
        raise ConfigError(f"unknown profile {profile!r}; valid profiles: {', '.join(valid)}")
    return profile


def load_profile(profile: str, profiles_dir: Path = PROFILES_DIR) -> dict:
    """``{"shared": {...}, "notebooks": {stem: {...}}}`` of a profile file. Bad YAML, a section
    that is not a mapping and a key given twice are :class:`ConfigError` naming file and line."""
    check_profile_name(profile, profiles_dir)
    path = Path(profiles_dir) / f"{profile}.yaml"
    where = str(path.relative_to(path.parents[2])) if len(path.parents) > 2 else str(path)
    try:
        data = yaml.load(path.read_bytes().decode("utf-8"), Loader=_UniqueKeyLoader)
    except UnicodeDecodeError as e:  # a profile saved in Latin-1 (issue 49): the file and the byte, not a traceback
        raise ConfigError(
            f"{where}: not UTF-8 (byte {e.object[e.start]:#04x} at offset {e.start}); save the file as UTF-8"
        ) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f", line {mark.line + 1} column {mark.column + 1}" if mark else ""
        raise ConfigError(f"{where}{at}: not valid YAML ({getattr(e, 'problem', None) or e})") from None
    except ConfigError as e:
        raise ConfigError(f"{where}, {e}") from None
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise ConfigError(
            f"{where}: a profile is a mapping with 'description', 'shared' and 'notebooks', not a {type(data).__name__}"
        )
    extra = set(data) - {"shared", "notebooks", "description"}
    if extra:
        raise ConfigError(
            f"{where}: unknown top-level keys {sorted(map(str, extra))}; use 'description', 'shared' and 'notebooks'"
        )
    for key in ("shared", "notebooks"):
        data[key] = data.get(key) or {}
        if not isinstance(data[key], dict):
            raise ConfigError(
                f"{where}: '{key}' must be a mapping of names to values, not a {type(data[key]).__name__}"
            )
    for nb, section in data["notebooks"].items():
        if section is not None and not isinstance(section, dict):
            raise ConfigError(
                f"{where}: notebooks.{nb} must be a mapping of parameters to values, not a {type(section).__name__}"
            )
    data["notebooks"] = {k: (v or {}) for k, v in data["notebooks"].items()}
    return data


def profile_values(
    profile: str, notebook: str, declared: dict[str, Param], profiles_dir: Path = PROFILES_DIR
) -> dict[str, Any]:
    """Values the profile sets for one notebook, checked against its declared parameters.

    Shared keys apply to every notebook that declares them; notebook keys must be declared by
    that notebook. Types must match the declaration (an int is accepted for a float).
    """
    data = load_profile(profile, profiles_dir)
    if "PROFILE" in data["shared"] or "PROFILE" in data["notebooks"].get(notebook, {}):
        raise ConfigError(
            f"profile {profile!r}, notebook {notebook}: PROFILE is set by the profile's own name "
            f"(configs/profiles/{profile}.yaml); remove the PROFILE key"
        )
    vals: dict[str, Any] = {k: v for k, v in data["shared"].items() if k in declared}
    own = data["notebooks"].get(notebook, {})
    unknown = sorted(set(own) - set(declared))
    if unknown:
        raise ConfigError(
            f"profile {profile!r}, notebook {notebook}: unknown parameter(s) {unknown}; declared: {sorted(declared)}"
        )
    vals.update(own)
    for k, v in vals.items():
        why = declared[k].problem(v)
        if why:
            hint = (
                " (YAML reads 3e-3 as a string: write 3.0e-3)"
                if isinstance(v, str) and declared[k].type == "float" and re.fullmatch(r"-?[\d.]+e-?\d+", v)
                else ""
            )
            raise ConfigError(
                f"profile {profile!r}, notebook {notebook}: {k} = {v!r} {why}{hint} "
                f"(declared `{k}: {declared[k].spec.text if declared[k].spec else declared[k].type}`)"
            )
    vals["PROFILE"] = profile if "PROFILE" in declared else vals.get("PROFILE")
    return {k: v for k, v in vals.items() if k in declared}


def check_profile_file(
    profile: str, notebooks: dict[str, dict[str, Param]], profiles_dir: Path = PROFILES_DIR
) -> dict[str, dict[str, Any]]:
    """Validate a whole profile against every notebook: no key may go unused."""
    data = load_profile(profile, profiles_dir)
    stray = sorted(set(data["notebooks"]) - set(notebooks))
    if stray:
        raise ConfigError(
            f"profile {profile!r} has sections for unknown notebooks {stray}; notebooks: {sorted(notebooks)}"
        )
    all_declared = set().union(*[set(d) for d in notebooks.values()]) if notebooks else set()
    unused = sorted(set(data["shared"]) - all_declared)
    if unused:
        raise ConfigError(f"profile {profile!r}: shared key(s) {unused} are declared by no notebook")
    return {nb: profile_values(profile, nb, decl, profiles_dir) for nb, decl in notebooks.items()}


class Config:
    """A frozen view of a notebook's parameters: ``cfg.N_PROBLEMS``, ``cfg.as_dict()``.
    ``defaults``: the notebook's own values (its parameters cell), so that its echo can say what a
    profile changed instead of repeating the cell above it (issue 36: the echo was up to 53 lines)."""

    def __init__(self, notebook: str, values: dict[str, Any], defaults: dict[str, Any] | None = None):
        object.__setattr__(self, "_notebook", notebook)
        object.__setattr__(self, "_values", MappingProxyType(dict(values)))
        object.__setattr__(self, "_defaults", dict(defaults) if defaults is not None else None)

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"{self._notebook} has no parameter {name}") from None

    def __setattr__(self, name, value):
        raise AttributeError("the config is frozen; change the parameters cell or the profile")

    @property
    def notebook(self) -> str:
        """The notebook stem this config belongs to (``"02_rollout_labelling"``)."""
        return self._notebook

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def changed(self) -> dict[str, Any]:
        """The values that differ from the notebook's own (its parameters cell); every value
        when the notebook's defaults are unknown."""
        if self._defaults is None:
            return {k: v for k, v in self._values.items() if k != "PROFILE"}
        return {k: v for k, v in self._values.items() if k != "PROFILE" and self._defaults.get(k, v) != v}

    def __repr__(self) -> str:
        head = (
            f"Config({self._notebook}): {len(self._values)} parameters checked against their declared types "
            f"and ranges, profile {self._values.get('PROFILE')!r}"
        )
        changed = self.changed()
        if self._defaults is not None and not changed:
            return head + "; every value is the parameters cell's"
        what = "differ from the parameters cell" if self._defaults is not None else "are"
        body = "\n".join(f"  {k} = {_short(v)}" for k, v in changed.items())
        return f"{head}; these {len(changed)} {what}:\n{body}"


def _short(v: Any, width: int = 100) -> str:
    r = repr(v)
    return r if len(r) <= width else r[: width - 3] + "..."


def list_notebooks(notebooks_dir: Path = NOTEBOOKS_DIR, only: list[str] | None = None) -> list[Path]:
    """The numbered notebooks, or those whose names start with one of ``only`` (an empty list or
    an empty prefix is an error: an unset shell variable must not select everything)."""
    nbs = sorted(p for p in Path(notebooks_dir).glob("[0-9][0-9]_*.ipynb"))
    if only is not None and (not only or any(not o.strip() for o in only)):
        raise ConfigError(
            f"--only needs notebook number prefixes (e.g. --only 01 02), got {only!r}; "
            "leave it out to run every notebook"
        )
    if only:
        sel = [p for p in nbs if any(p.stem.startswith(o) for o in only)]
        missing = [o for o in only if not any(p.stem.startswith(o) for p in nbs)]
        if missing:
            raise ConfigError(f"no notebook matches {missing}; notebooks: {[p.stem for p in nbs]}")
        return sel
    return nbs


def checked_parameters(profile: str, notebooks: list[Path], profiles_dir: Path = PROFILES_DIR) -> dict[str, dict]:
    """Checked parameters of the selected notebooks (raises ConfigError on any problem).

    The whole profile is validated against every notebook of the folder, so running one stage
    (``--only``) still rejects a typo anywhere in the profile."""
    folders = {p.parent for p in notebooks}
    everyone = [q for f in folders for q in list_notebooks(f)]
    declared = {p.stem: notebook_parameters(p) for p in everyone}
    checked = check_profile_file(profile, declared, profiles_dir)
    return {p.stem: checked[p.stem] for p in notebooks}


def with_defaults(notebooks: list[Path], params: dict[str, dict]) -> dict[str, dict]:
    """Every parameter of each notebook: the cell's defaults, then ``params`` (the profile's)."""
    return {
        nb.stem: {**{k: d.default for k, d in notebook_parameters(nb).items()}, **params[nb.stem]} for nb in notebooks
    }


def resolve(namespace: dict, notebook: str, profiles_dir: Path = PROFILES_DIR, verbose: bool = True) -> Config:
    """Turn a notebook's parameter variables into a checked, frozen :class:`Config`.

    ``namespace`` is the kernel's ``globals()``; the declared parameters are the names annotated
    in the parameters cell. Values set by the profile named in ``PROFILE`` are applied (the runner
    also injects them, so this only matters when a notebook is run by hand with another profile),
    except where this run set a value of its own (one that differs from the saved cell's: papermill
    ``-p`` or an edited cell), which wins and is printed. Unknown upper-case names injected by
    papermill and wrongly typed values raise :class:`ConfigError`.
    """
    ann = namespace.get("__annotations__", {})
    declared = {k: _param(k, _annotation_text(v)) for k, v in ann.items() if k.isupper()}
    source = NOTEBOOKS_DIR / f"{notebook}.ipynb"  # the cell's own text: constraints live in its comments
    cell = notebook_parameters(source) if source.exists() else {}
    declared = {k: cell.get(k, p) for k, p in declared.items()}  # a name the saved cell lacks: its type only
    if "PROFILE" not in declared:
        raise ConfigError(f"{notebook}: the parameters cell must declare PROFILE: str")
    known_other = {"In", "Out"}
    stray = [
        k for k in namespace if k.isupper() and k not in declared and k not in known_other and not k.startswith("_")
    ]
    if stray:
        raise ConfigError(f"{notebook}: unknown parameter(s) {sorted(stray)} (declared: {sorted(declared)})")
    values = {k: namespace[k] for k in declared}
    profile = values["PROFILE"]
    check_profile_name(profile, profiles_dir)
    for k, v in profile_values(profile, notebook, declared, profiles_dir).items():
        if values[k] == v:
            continue
        if k in cell and values[k] != cell[k].default:
            # set for this run (papermill -p, or the cell edited in JupyterLab): it wins over the
            # profile, and says so (issue 49: it was replaced silently, and called the cell's value)
            if verbose:
                print(
                    f"{k} = {values[k]!r}, set for this run (profile {profile} has {v!r}; the saved cell {cell[k].default!r})"
                )
            continue
        if verbose:
            print(f"profile {profile}: {k} = {v!r} (cell had {values[k]!r})")
        values[k] = v
    for k, v in values.items():
        why = declared[k].problem(v)
        if why:
            raise ConfigError(f"{notebook}: {k} = {v!r} {why} (declared `{k}: {declared[k].spec.text}`)")
    defaults = (
        {k: p.default for k, p in cell.items()} if cell else None
    )  # the cell's own values (papermill overwrote them here)
    return Config(notebook, values, defaults)


def for_notebook(
    profile: str, notebook: str, profiles_dir: Path = PROFILES_DIR, notebooks_dir: Path = NOTEBOOKS_DIR
) -> Config:
    """The checked :class:`Config` a notebook would run with under ``profile`` (its cell's
    defaults, then the profile's values), for the same work outside a kernel: the data-parallel
    workers of notebooks 02, 05, 06 and 07. ``notebook``: its stem (``"05_processbench"``)."""
    nb = Path(notebooks_dir) / f"{notebook}.ipynb"
    if not nb.exists():
        raise ConfigError(f"no notebook {nb.name} in {notebooks_dir}")
    values = with_defaults([nb], checked_parameters(profile, [nb], profiles_dir))[nb.stem]
    return Config(nb.stem, {**values, "PROFILE": profile}, {k: p.default for k, p in notebook_parameters(nb).items()})
