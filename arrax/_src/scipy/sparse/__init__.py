"""Implementation of arrax.scipy.sparse."""
