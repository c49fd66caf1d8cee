// The autotuner's CSV log (HOROVOD_AUTOTUNE_LOG), in Horovod's columns:
//   hierarchical_allreduce,hierarchical_allgather,torus_allreduce,cache_enabled,
//   cycle_time_ms,tensor_fusion_threshold,score
// with the threshold in MiB, as Horovod writes it, and the score in bytes reduced per
// second. One row per sample, the chosen point last; every row is flushed as it is
// written, so a job that ends early leaves a valid file.
#pragma once

#include <cstdio>
#include <string>

#include "tune/tuned_params.h"

namespace hvd {

class TuneLog {
 public:
  static constexpr const char* kHeader =
      "hierarchical_allreduce,hierarchical_allgather,torus_allreduce,cache_enabled,"
      "cycle_time_ms,tensor_fusion_threshold,score";

  TuneLog() = default;
  ~TuneLog();
  TuneLog(const TuneLog&) = delete;
  TuneLog& operator=(const TuneLog&) = delete;

  // Writes the header to a new file at path (base/atomic_file.h: what was there is
  // replaced, a planted link never followed). False with *error when it cannot.
  bool open(const std::string& path, std::string* error);
  bool is_open() const { return file_ != nullptr; }
  const std::string& path() const { return path_; }
  // Appends one row; after a write error the log stops (with one warning).
  void row(const TunedParams& params, double score);

 private:
  FILE* file_ = nullptr;
  std::string path_;
};

}  // namespace hvd
