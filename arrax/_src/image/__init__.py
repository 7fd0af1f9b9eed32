"""Image resampling (jax.image): resize and scale_and_translate."""
