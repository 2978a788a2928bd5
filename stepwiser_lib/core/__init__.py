"""Layer 0: shared names (vocab), settings (checks, config), paths, files (io, schemas), prompts and the
chunk and verdict formats. Imports nothing outside core; no torch.
"""
