"""Layer 3: the paper's method, one module (or more) per notebook stage, plus problem sources and
answer checking (tasks). Imports core, evals and engines; the toy world only through tasks.
"""
