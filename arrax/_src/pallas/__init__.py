"""Pallas (jax.experimental.pallas) in interpret mode: see pallas_call.py."""
