#include "tune/tune_log.h"

#include <cerrno>
#include <cstring>

#include "base/atomic_file.h"
#include "base/log.h"

namespace hvd {

TuneLog::~TuneLog() {
  if (file_) std::fclose(file_);
}

bool TuneLog::open(const std::string& path, std::string* error) {
  if (file_) std::fclose(file_);
  // In place at once, never through a planted link (base/atomic_file.h): rows are
  // flushed as they come so that a job that ends early leaves a valid log.
  std::string why;
  file_ = create_file_in_place(path, &why);
  if (!file_) {
    if (error) *error = "the autotune log: " + why;
    return false;
  }
  path_ = path;
  if (std::fprintf(file_, "%s\n", kHeader) < 0 || std::fflush(file_) != 0) {
    if (error) *error = "cannot write autotune log '" + path + "': " + std::strerror(errno);
    std::fclose(file_);
    file_ = nullptr;
    return false;
  }
  return true;
}

void TuneLog::row(const TunedParams& p, double score) {
  if (!file_) return;
  int rc = std::fprintf(file_, "%d,%d,%d,%d,%g,%.6g,%.6g\n", p.hierarchical_allreduce ? 1 : 0,
                        p.hierarchical_allgather ? 1 : 0, p.torus_allreduce ? 1 : 0,
                        p.cache_enabled ? 1 : 0, p.cycle_time_ms,
                        static_cast<double>(p.fusion_threshold) / (1 << 20), score);
  if (rc < 0 || std::fflush(file_) != 0) {
    HVD_LOG(Warning, "writing the autotune log '%s' failed (%s); it stops here", path_.c_str(),
            std::strerror(errno));
    std::fclose(file_);
    file_ = nullptr;
  }
}

}  // namespace hvd
