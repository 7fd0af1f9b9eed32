"""arrax.experimental.layout (`jax.experimental.layout`)."""
from arrax._src.layout import (Format as Format, Layout as Layout,
                               with_layout_constraint as with_layout_constraint)
