"""XLA tokens, which order side effects: `create_token` makes one, `after_all` joins several.

A token's abstract value is `core.abstract_token` (printed `Tok`); at run time it is a
`core.Token`. Tokens have no derivatives and cannot be batched.
"""
from __future__ import annotations

from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import batching, core

__all__ = ["after_all", "create_token"]


create_token_p = core.Primitive("create_token")
create_token_p.def_abstract_eval(lambda *_: core.abstract_token)
create_token_p.def_lowering(lambda ctx, *_: [hlo.create_token()])
create_token_p.def_batch(batching.no_batching_rule("create_token"))


def create_token(_=None):
  """A new token with no preconditions (the argument is ignored)."""
  return create_token_p.bind()


after_all_p = core.Primitive("after_all")


@after_all_p.def_abstract_eval
def _after_all_abstract_eval(*operands):
  if any(x is not core.abstract_token for x in operands):
    raise TypeError("Arguments to after_all must be tokens")
  return core.abstract_token


after_all_p.def_lowering(lambda ctx, *operands: [hlo.after_all(list(operands))])
after_all_p.def_batch(batching.no_batching_rule("after_all"))


def after_all(*operands):
  """A token that comes after all the given tokens."""
  return after_all_p.bind(*operands)
