"""Layer 1: statistics, per-item predictions and paired comparisons, the claims table and the paper's
reported numbers. Imports only core; no torch.
"""
