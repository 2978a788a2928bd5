"""Profiles and notebook parameters: one checked, frozen config per notebook run.

Every notebook has one papermill ``parameters`` cell of typed literals::

    N_PROBLEMS: int = 300  # prompts sampled for SFT data; tiny scale

and the next cell calls :func:`resolve`, which

* collects exactly the names annotated in that cell (``__annotations__`` of the kernel),
* applies the profile named by ``PROFILE`` (``configs/profiles/<PROFILE>.yaml``: a ``shared``
  section plus one section per notebook, holding only values that differ from the cell),
* checks every value against its declared type, rejects unknown names, and
* returns a frozen :class:`Config`.

The runner (:mod:`stepwiser_lib.runner`) performs the same checks on the notebook file *before*
a kernel starts, so a typo in a profile fails in a second, not after ten minutes of compute.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from .paths import PROFILES_DIR

PROFILES = ("smoke", "colab-smoke", "tiny", "colab", "paper")

_TYPES: dict[str, tuple[type, ...]] = {
    "int": (int,), "float": (float, int), "str": (str,), "bool": (bool,), "list": (list,),
    "dict": (dict,),
}


class ConfigError(ValueError):
    """A profile or parameter problem, reported before any compute starts."""


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # one of _TYPES, e.g. "int", "list"
    default: Any
    comment: str


def _base_type(annotation: str) -> str:
    t = annotation.split("[", 1)[0].strip()
    if t not in _TYPES:
        raise ConfigError(f"parameter type {annotation!r} is not one of {sorted(_TYPES)}")
    return t


def type_ok(value: Any, type_name: str) -> bool:
    if type_name in ("int", "float") and isinstance(value, bool):
        return False  # True is an int in Python, but never a sensible count or rate
    return isinstance(value, _TYPES[type_name])


def parse_parameters_source(source: str) -> dict[str, Param]:
    """Declared parameters of a parameters cell: ``NAME: type = literal  # comment`` lines."""
    tree = ast.parse(source)
    lines = source.splitlines()
    out: dict[str, Param] = {}
    for node in tree.body:
        if not isinstance(node, ast.AnnAssign) or not isinstance(node.target, ast.Name):
            raise ConfigError(f"parameters cell line {node.lineno}: only `NAME: type = literal` "
                              "lines are allowed")
        name = node.target.id
        if node.value is None:
            raise ConfigError(f"parameter {name} has no default value")
        try:
            default = ast.literal_eval(node.value)
        except ValueError as e:
            raise ConfigError(f"parameter {name}: the default must be a literal") from e
        tname = _base_type(ast.unparse(node.annotation))
        if not type_ok(default, tname):
            raise ConfigError(f"parameter {name}: default {default!r} is not a {tname}")
        line = lines[node.lineno - 1]
        comment = line.split("#", 1)[1].strip() if "#" in line else ""
        out[name] = Param(name, tname, default, comment)
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


def load_profile(profile: str, profiles_dir: Path = PROFILES_DIR) -> dict:
    """``{"shared": {...}, "notebooks": {stem: {...}}}`` of a profile file."""
    path = Path(profiles_dir) / f"{profile}.yaml"
    if not path.exists():
        valid = sorted(p.stem for p in Path(profiles_dir).glob("*.yaml"))
        raise ConfigError(f"unknown profile {profile!r}; valid profiles: {', '.join(valid)}")
    data = yaml.load(path.read_text(), Loader=_UniqueKeyLoader) or {}
    extra = set(data) - {"shared", "notebooks", "description"}
    if extra:
        raise ConfigError(f"{path}: unknown top-level keys {sorted(extra)}; "
                          "use 'description', 'shared' and 'notebooks'")
    data.setdefault("shared", {})
    data.setdefault("notebooks", {})
    data["shared"] = data["shared"] or {}
    data["notebooks"] = {k: (v or {}) for k, v in (data["notebooks"] or {}).items()}
    return data


def profile_values(profile: str, notebook: str, declared: dict[str, Param],
                   profiles_dir: Path = PROFILES_DIR) -> dict[str, Any]:
    """Values the profile sets for one notebook, checked against its declared parameters.

    Shared keys apply to every notebook that declares them; notebook keys must be declared by
    that notebook. Types must match the declaration (an int is accepted for a float).
    """
    data = load_profile(profile, profiles_dir)
    vals: dict[str, Any] = {k: v for k, v in data["shared"].items() if k in declared}
    own = data["notebooks"].get(notebook, {})
    unknown = sorted(set(own) - set(declared))
    if unknown:
        raise ConfigError(f"profile {profile!r}, notebook {notebook}: unknown parameter(s) "
                          f"{unknown}; declared: {sorted(declared)}")
    vals.update(own)
    for k, v in vals.items():
        if not type_ok(v, declared[k].type):
            raise ConfigError(f"profile {profile!r}, notebook {notebook}: {k} = {v!r} is not a "
                              f"{declared[k].type} (declared `{k}: {declared[k].type}`)")
    vals["PROFILE"] = profile if "PROFILE" in declared else vals.get("PROFILE")
    return {k: v for k, v in vals.items() if k in declared}


def check_profile_file(profile: str, notebooks: dict[str, dict[str, Param]],
                       profiles_dir: Path = PROFILES_DIR) -> dict[str, dict[str, Any]]:
    """Validate a whole profile against every notebook: no key may go unused."""
    data = load_profile(profile, profiles_dir)
    stray = sorted(set(data["notebooks"]) - set(notebooks))
    if stray:
        raise ConfigError(f"profile {profile!r} has sections for unknown notebooks {stray}; "
                          f"notebooks: {sorted(notebooks)}")
    all_declared = set().union(*[set(d) for d in notebooks.values()]) if notebooks else set()
    unused = sorted(set(data["shared"]) - all_declared)
    if unused:
        raise ConfigError(f"profile {profile!r}: shared key(s) {unused} are declared by no notebook")
    return {nb: profile_values(profile, nb, decl, profiles_dir) for nb, decl in notebooks.items()}


class Config:
    """A frozen view of a notebook's parameters: ``cfg.N_PROBLEMS``, ``cfg.as_dict()``."""

    def __init__(self, notebook: str, values: dict[str, Any]):
        object.__setattr__(self, "_notebook", notebook)
        object.__setattr__(self, "_values", MappingProxyType(dict(values)))

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

    def __repr__(self) -> str:
        body = "\n".join(f"  {k} = {v!r}" for k, v in self._values.items())
        return f"Config({self._notebook}):\n{body}"


def resolve(namespace: dict, notebook: str, profiles_dir: Path = PROFILES_DIR,
            verbose: bool = True) -> Config:
    """Turn a notebook's parameter variables into a checked, frozen :class:`Config`.

    ``namespace`` is the kernel's ``globals()``; the declared parameters are the names annotated
    in the parameters cell. Values set by the profile named in ``PROFILE`` are applied (the runner
    also injects them, so this only matters when a notebook is run by hand with another profile).
    Unknown upper-case names injected by papermill and wrongly typed values raise
    :class:`ConfigError`.
    """
    ann = namespace.get("__annotations__", {})
    declared = {k: Param(k, _base_type(v if isinstance(v, str) else getattr(v, "__name__", str(v))),
                         None, "") for k, v in ann.items() if k.isupper()}
    if "PROFILE" not in declared:
        raise ConfigError(f"{notebook}: the parameters cell must declare PROFILE: str")
    known_other = {"In", "Out"}
    stray = [k for k in namespace if k.isupper() and k not in declared and k not in known_other
             and not k.startswith("_")]
    if stray:
        raise ConfigError(f"{notebook}: unknown parameter(s) {sorted(stray)} (declared: "
                          f"{sorted(declared)})")
    values = {k: namespace[k] for k in declared}
    profile = values["PROFILE"]
    if profile not in PROFILES:
        raise ConfigError(f"unknown profile {profile!r}; valid profiles: {', '.join(PROFILES)}")
    for k, v in profile_values(profile, notebook, declared, profiles_dir).items():
        if values[k] != v and verbose:
            print(f"profile {profile}: {k} = {v!r} (cell had {values[k]!r})")
        values[k] = v
    for k, v in values.items():
        if not type_ok(v, declared[k].type):
            raise ConfigError(f"{notebook}: {k} = {v!r} is not a {declared[k].type}")
    return Config(notebook, values)
