"""arrax.experimental.multihost_utils: data exchange between the processes of a job."""
from arrax._src.multihost_utils import (
    ProcessFailureError as ProcessFailureError, assert_equal as assert_equal,
    broadcast_one_to_all as broadcast_one_to_all,
    global_array_to_host_local_array as global_array_to_host_local_array,
    global_array_to_host_local_array_impl as global_array_to_host_local_array_impl,
    global_array_to_host_local_array_p as global_array_to_host_local_array_p,
    host_local_array_to_global_array as host_local_array_to_global_array,
    host_local_array_to_global_array_impl as host_local_array_to_global_array_impl,
    host_local_array_to_global_array_p as host_local_array_to_global_array_p,
    live_devices as live_devices, process_allgather as process_allgather,
    reached_preemption_sync_point as reached_preemption_sync_point,
    sync_global_devices as sync_global_devices)
