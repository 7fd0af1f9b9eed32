"""arrax.extend.sharding (`jax.extend.sharding`): shardings given as XLA HloShardings, and
conversions between HloShardings and their serialized OpSharding protos."""
from jaxlib import xla_client as xla_client

from arrax._src.sharding_impls import GSPMDSharding as GSPMDSharding


def get_op_sharding_from_serialized_proto(sharding: bytes) -> xla_client.OpSharding:
  """The OpSharding a serialized proto holds."""
  proto = xla_client.OpSharding()
  proto.ParseFromString(sharding)
  return proto


def get_hlo_sharding_from_serialized_proto(sharding: bytes) -> xla_client.HloSharding:
  """The HloSharding of a serialized OpSharding proto."""
  return xla_client.HloSharding.from_proto(get_op_sharding_from_serialized_proto(sharding))


def get_serialized_proto_from_hlo_sharding(sharding: xla_client.HloSharding) -> bytes:
  """`sharding` as a serialized OpSharding proto."""
  return sharding.to_proto().SerializeToString()
