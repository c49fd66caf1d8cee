// Runs planned batches: fusion copies, the collective through a backend, scaling, and
// completion of the local requests.
#pragma once

#include <functional>
#include <vector>

#include "core/controller.h"
#include "core/params.h"
#include "fusion/planner.h"
#include "ops/backend.h"

namespace hvd {

class Executor {
 public:
  using Complete = std::function<void(Request&&, const Error&)>;

  Executor(Backend* host, ProcessSetTable* sets, Complete complete)
      : host_(host), sets_(sets), complete_(std::move(complete)) {}

  void run(const Batch& batch, const std::vector<Response>& responses, Controller& controller);

 private:
  Error allreduce_single(const Response& r, Request* local, const ProcessSet& set);
  Error allreduce_fused(const Batch& batch, const std::vector<Response>& responses,
                        const std::vector<Request*>& locals, const ProcessSet& set);
  Error broadcast(const Response& r, Request* local, const ProcessSet& set);
  void* scratch(size_t bytes, bool zero);

  Backend* host_;
  ProcessSetTable* sets_;
  Complete complete_;
  std::vector<unsigned char> fusion_buffer_;
  std::vector<unsigned char> scratch_;
};

}  // namespace hvd
