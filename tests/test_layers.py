"""The library's layers (docs/architecture.md): every import of ``stepwiser_lib``, inside functions
too, points down the stack, no two modules import each other through any path, and an import left
inside a function says why.

    core  <-  evals, engines  <-  toy  <-  method  <-  tools

A module imports its own package or packages below it; ``evals`` and ``engines`` are siblings and
never import each other; in ``method`` only ``tasks`` reaches the toy world (its adapter).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

LIB = Path(__file__).resolve().parents[1] / "stepwiser_lib"
RANK = {"core": 0, "evals": 1, "engines": 1, "toy": 2, "method": 3, "tools": 4}
#: The one door from the method to the toy world: its world queries (step truth, analysis verdicts).
TOY_ADAPTER = "stepwiser_lib.method.tasks"
#: Modules that import torch or matplotlib at their top; everything else must import without them.
HEAVY = {
    "engines.models",
    "engines.decoding",
    "toy.toybase",
    "tools.plotting",
    "tools.bench",
    "tools.grpo_bench",
    "tools.toy_trials",
    "tools.gpuprobe",
}
#: At most this many imports of the library stay inside functions (issue 32: fewer than 40).
MAX_LAZY = 39


def _modules() -> dict[str, Path]:
    out = {}
    for p in sorted(LIB.rglob("*.py")):
        parts = list(p.relative_to(LIB.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def imports() -> list[dict]:
    """Every import of a library module: source, target, line, enclosing function, the line's text."""
    mods = _modules()
    found = []
    for name, path in mods.items():
        pkg = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        lines = path.read_text().splitlines()

        def visit(node, func):
            for ch in ast.iter_child_nodes(node):
                f = ch.name if isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
                if isinstance(ch, ast.ImportFrom):
                    base = pkg[: len(pkg) - ch.level + 1] if ch.level else []
                    full = ".".join(base + ([ch.module] if ch.module else [])) if ch.level else ch.module or ""
                    targets = [full] if full in mods else []
                    targets += [f"{full}.{a.name}" for a in ch.names if f"{full}.{a.name}" in mods]
                    for t in targets:
                        if t not in ("stepwiser_lib", name) and not (
                            t.count(".") == 1 and t in mods and mods[t].name == "__init__.py"
                        ):
                            found.append(
                                {
                                    "src": name,
                                    "dst": t,
                                    "line": ch.lineno,
                                    "func": f,
                                    "text": "\n".join(lines[ch.lineno - 1 : ch.end_lineno]),
                                }
                            )
                elif isinstance(ch, ast.Import):
                    for a in ch.names:
                        if a.name.startswith("stepwiser_lib.") and a.name in mods:
                            found.append(
                                {"src": name, "dst": a.name, "line": ch.lineno, "func": f, "text": lines[ch.lineno - 1]}
                            )
                visit(ch, f)

        visit(ast.parse(path.read_text()), None)
    return found


def _package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 else None


#: Top-level doors for users (issue 37): each only re-exports a layer module's public names.
ENTRY = {"stepwiser_lib.export", "stepwiser_lib.reward"}


def test_every_module_lives_in_a_layer_package():
    loose = [m for m in _modules() if m.count(".") == 1 and m.split(".")[1] not in RANK and m not in ENTRY]
    assert not loose, f"modules outside the layer packages {sorted(RANK)}: {loose}"


def test_imports_point_down_the_layers():
    bad = []
    for e in imports():
        a, b = _package(e["src"]), _package(e["dst"])
        if a is None or b is None or a == b:
            continue
        ok = RANK[b] < RANK[a] and not (a == "method" and b == "toy" and e["src"] != TOY_ADAPTER)
        if not ok:
            bad.append(f"{e['src']}:{e['line']} imports {e['dst']} ({a} -> {b})")
    assert not bad, "imports against the layers:\n" + "\n".join(bad)


def test_no_import_cycle_even_through_imports_inside_functions():
    graph = defaultdict(set)
    for e in imports():
        graph[e["src"]].add(e["dst"])
    # Tarjan's strongly connected components, iterative
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]
    for root in list(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        x = stack.pop()
                        on.discard(x)
                        comp.append(x)
                        if x == v:
                            break
                    if len(comp) > 1:
                        comps.append(sorted(comp))
            elif w not in index:
                index[w] = low[w] = counter[0]
                counter[0] += 1
                stack.append(w)
                on.add(w)
                work.append((w, iter(sorted(graph[w]))))
            elif w in on:
                low[v] = min(low[v], index[w])
    assert not comps, f"import cycles: {comps}"


def test_imports_inside_functions_are_few_and_say_why():
    lazy = [e for e in imports() if e["func"]]
    silent = [f"{e['src']}:{e['line']} {e['text'].strip()}" for e in lazy if "# lazy:" not in e["text"]]
    assert not silent, (
        "an import inside a function needs a `# lazy: <reason>` comment (else move it to the top):\n"
        + "\n".join(silent)
    )
    assert len(lazy) <= MAX_LAZY, f"{len(lazy)} imports inside functions (at most {MAX_LAZY})"


def test_light_modules_import_without_torch_or_matplotlib():
    light = [m for m in _modules() if m.count(".") >= 2 and m.split(".", 1)[1] not in HEAVY]
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in light)
        + "print(sorted(k for k in ('torch', 'matplotlib', 'transformers') if k in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=LIB.parent, check=True)
    assert out.stdout.strip() == "[]", f"importing the light modules pulled in {out.stdout.strip()}"
    for m in HEAVY:
        assert (LIB / (m.replace(".", "/") + ".py")).exists(), f"HEAVY names a missing module {m}"


def test_no_private_name_is_imported_across_modules():
    """A module that needs another's helper uses its public name (the review's labelling._prefix_settled)."""
    bad = []
    for name, path in _modules().items():
        for n in ast.walk(ast.parse(path.read_text())):
            if isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").startswith("stepwiser_lib")):
                bad += [
                    f"{name}:{n.lineno} imports {a.name}"
                    for a in n.names
                    if a.name.startswith("_") and a.name != "__future__"
                ]
    assert not bad, "\n".join(bad)
