"""Layer 1: load, resolve, generate (HF and vLLM), fine-tune (TRL settings, SFT), launch on several
GPUs, estimate memory; the real-architecture stand-ins. Imports only core.
"""
