"""Tiny example libraries, as in ``jax.example_libraries``: :mod:`stax` (neural-net layers)
and :mod:`optimizers` (first-order optimizers over pytrees).

They are examples only, kept small on purpose; importing this package loads both so that
``arrax.example_libraries.stax`` works after a plain ``import arrax.example_libraries``.
"""
from arrax.example_libraries import optimizers, stax

__all__ = ["optimizers", "stax"]
