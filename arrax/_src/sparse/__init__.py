"""arrax's jax.experimental.sparse: formats (bcoo, bcsr, coo, csr), sparsify (transform)."""
