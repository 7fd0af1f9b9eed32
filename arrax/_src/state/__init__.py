"""Mutable array references (JAX's `jax._src.state`): `primitives` holds the Ref type, the
ref primitives with their rules and state discharge; `types` the abstract value."""
