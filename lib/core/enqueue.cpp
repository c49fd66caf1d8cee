#include "core/enqueue.h"

namespace hvd {

Error enqueue(Runtime& rt, std::vector<Request>&& requests, hvd_handle_t* handle) {
  auto state = std::make_shared<HandleState>(static_cast<int>(requests.size()));
  double now = now_seconds();
  for (Request& r : requests) {
    r.handle = state;
    r.enqueue_time = now;
  }
  hvd_handle_t h = rt.handles.add(state);
  Error err = rt.queue.push(std::move(requests));
  if (!err.ok()) {
    rt.handles.take(h);
    return err;
  }
  *handle = h;
  return Error::success();
}

Error wait_handle(Runtime& rt, hvd_handle_t handle) {
  auto state = rt.handles.take(handle);
  if (!state)
    return make_error(HVD_ERR_INVALID_ARGUMENT,
                      "unknown handle %lld: it was never returned by libhvd, or was already "
                      "waited for",
                      static_cast<long long>(handle));
  state->wait(rt.params.spin_us);
  return state->result();
}

std::string auto_name(Runtime& rt, const char* op) {
  return std::string(op) + ".noname." + std::to_string(rt.auto_name_counter.fetch_add(1));
}

}  // namespace hvd
