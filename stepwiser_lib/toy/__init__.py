"""Layer 2: the toy world (problems with exactly checkable steps), its base model, the toy judge's
text and toy-ProcessBench. Imports core and engines; in method only tasks imports it.
"""
