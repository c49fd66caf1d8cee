#!/bin/sh
# Only the C ABI may be exported: hvd_* and horovod_* (plus the version node).
set -eu
lib="$1"
bad=$(nm -D --defined-only "$lib" | awk '{sub(/@.*/, "", $NF); print $NF}' | grep -v -E '^(hvd_|horovod_|HOROVOD_PROCESS_SET_ERROR_[A-Z_]+$|HVD_0$)' || true)
if [ -n "$bad" ]; then
  echo "libhvd exports symbols outside the ABI:"
  echo "$bad"
  exit 1
fi
count=$(nm -D --defined-only "$lib" | awk '{sub(/@.*/, "", $NF); print $NF}' | grep -c '^hvd_')
for required in hvd_init hvd_shutdown hvd_allreduce hvd_allreduce_async hvd_broadcast \
    hvd_broadcast_async hvd_poll hvd_wait hvd_rank hvd_local_rank hvd_last_error \
    hvd_status_string hvd_init_comm hvd_init_comm_f hvd_allgather hvd_alltoall \
    hvd_reducescatter hvd_join hvd_barrier hvd_add_process_set horovod_init horovod_rank \
    horovod_size horovod_local_rank horovod_add_process_set horovod_reduce_op_average \
    HOROVOD_PROCESS_SET_ERROR_INIT hvd_get_step_stats hvd_get_step_top_tensors hvd_mark_step; do
  nm -D --defined-only "$lib" | awk '{sub(/@.*/, "", $NF); print $NF}' | grep -qx "$required" || {
    echo "missing export: $required"; exit 1; }
done
echo "ok: $count hvd_* symbols, nothing else exported"
