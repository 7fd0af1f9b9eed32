"""Implementation of arrax.scipy.cluster."""
