"""Layer 4: what runs and reports the notebooks: runner, dry-run plan, the generated tables of docs/, Colab
bootstrap, GPU check, bench, toy trials, plots, teaching cells. Nothing in the library imports it.
"""
