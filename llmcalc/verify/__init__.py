"""Holding the figures to the real thing: transformers' model (reference.py and measured.py, the only
modules that import torch/transformers, lazily) and config files' expected figures (check.py)."""
