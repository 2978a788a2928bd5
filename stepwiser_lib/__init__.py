"""stepwiser_lib: the library behind the StepWiser companion's notebooks (arXiv 2508.19229).

Six packages in layers; a module imports only its own package or packages to its left, ``evals``
and ``engines`` never import each other, and in ``method`` only ``tasks`` reaches the toy world::

    core  <-  evals, engines  <-  toy  <-  method  <-  tools

* ``core``: shared names, settings, paths, files, schemas, prompts and the text formats (no torch).
* ``evals``: statistics, paired comparisons, the claims table and the paper's numbers (no torch).
* ``engines``: model loading and resolution, generation (HF, vLLM), SFT and TRL settings, launch, memory.
* ``toy``: the toy world, its base model, the toy judge's text, toy-ProcessBench.
* ``method``: the paper's stages, one module (or more) per notebook, and problem sources.
* ``tools``: the notebook runner, dry-run plans, the generated tables of docs/, Colab, plots, bench.

``docs/architecture.md`` names every module; ``tests/test_layers.py`` enforces the rule.
"""
