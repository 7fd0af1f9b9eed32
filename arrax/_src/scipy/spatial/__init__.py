"""Implementation of arrax.scipy.spatial."""
