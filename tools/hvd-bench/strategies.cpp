#include "strategies.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>

#include <hvd/hvd.h>

#include "comm.h"

namespace hvdbench {

namespace {

// MPI counts are int; larger buffers go in pieces of this many floats.
constexpr int64_t kMaxMpiCount = int64_t{1} << 30;

void mpi_sum_in_place(float* data, int64_t count) {
  while (count > 0) {
    int n = static_cast<int>(std::min(count, kMaxMpiCount));
    int rc = MPI_Allreduce(MPI_IN_PLACE, data, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) abort_job("MPI_Allreduce failed with code " + std::to_string(rc));
    data += n;
    count -= n;
  }
}

// libhvd's HVD_ALLREDUCE_CHUNK_BYTES as it runs here: its default is per MPI, and the
// environment may set it.
int64_t libhvd_chunk_bytes() {
  char text[32];
  if (hvd_param_get("HVD_ALLREDUCE_CHUNK_BYTES", text, sizeof text) != HVD_SUCCESS)
    return int64_t{1} << 20;
  const long long bytes = std::strtoll(text, nullptr, 10);
  return bytes > 0 ? bytes : int64_t{1} << 20;
}

}  // namespace

std::string StrategyCase::name() const {
  switch (strategy) {
    case Strategy::Libhvd: return "libhvd";
    case Strategy::PerTensor: return "per-tensor";
    case Strategy::Packed: return "packed";
    case Strategy::PackedChunks: return "packed-chunks-" + std::to_string(chunk_bytes >> 20) + "MiB";
    case Strategy::FusedCopies: return "fused-copies";
    case Strategy::Hybrid: return "hybrid";
  }
  return "?";
}

std::vector<StrategyCase> step_cases(bool with_references, int64_t total_bytes) {
  std::vector<StrategyCase> cases{{Strategy::Libhvd}};
  if (!with_references) return cases;
  cases.push_back({Strategy::PerTensor});
  cases.push_back({Strategy::Packed});
  for (int64_t mib : {1, 4, 16}) {
    int64_t bytes = mib << 20;
    if (bytes < total_bytes) cases.push_back({Strategy::PackedChunks, bytes});
  }
  // Reduced in one call up to 16 MiB, above in 4 MiB pieces (the packed buffer's
  // usual best on these machines).
  cases.push_back({Strategy::FusedCopies, total_bytes <= (int64_t{16} << 20) ? 0 : int64_t{4} << 20});
  cases.push_back({Strategy::Hybrid, libhvd_chunk_bytes()});
  return cases;
}

void run_reference(const StrategyCase& c, TensorSet& set) {
  switch (c.strategy) {
    case Strategy::Libhvd:
      abort_job("run_reference called for libhvd");
    case Strategy::PerTensor:
      // Reverse order, as libhvd receives them: the same data in the same order.
      for (size_t t = set.count(); t-- > 0;) mpi_sum_in_place(set.tensor(t), set.elements(t));
      return;
    case Strategy::Packed:
      mpi_sum_in_place(set.packed(), set.total_elements());
      return;
    case Strategy::PackedChunks: {
      const int64_t chunk = c.chunk_bytes / static_cast<int64_t>(sizeof(float));
      float* data = set.packed();
      for (int64_t done = 0; done < set.total_elements(); done += chunk)
        mpi_sum_in_place(data + done, std::min(chunk, set.total_elements() - done));
      return;
    }
    case Strategy::FusedCopies: {
      float* packed = set.staging();
      int64_t at = 0;
      for (size_t t = set.count(); t-- > 0; at += set.elements(t))
        std::copy_n(set.tensor(t), set.elements(t), packed + at);
      const int64_t total = set.total_elements();
      const int64_t chunk = c.chunk_bytes ? c.chunk_bytes / static_cast<int64_t>(sizeof(float)) : total;
      for (int64_t done = 0; done < total; done += chunk)
        mpi_sum_in_place(packed + done, std::min(chunk, total - done));
      at = 0;
      for (size_t t = set.count(); t-- > 0; at += set.elements(t))
        std::copy_n(packed + at, set.elements(t), set.tensor(t));
      return;
    }
    case Strategy::Hybrid: {
      // libhvd's plan: HVD_INPLACE_MIN_BYTES's default, its HVD_ALLREDUCE_CHUNK_BYTES.
      constexpr int64_t kInPlaceMin = (int64_t{256} << 10) / static_cast<int64_t>(sizeof(float));
      const int64_t chunk = c.chunk_bytes / static_cast<int64_t>(sizeof(float));
      float* packed = set.staging();
      int64_t small = 0;
      for (size_t t = set.count(); t-- > 0;) {
        const int64_t n = set.elements(t);
        if (n < kInPlaceMin) {
          std::copy_n(set.tensor(t), n, packed + small);
          small += n;
          continue;
        }
        for (int64_t done = 0; done < n; done += chunk)
          mpi_sum_in_place(set.tensor(t) + done, std::min(chunk, n - done));
      }
      if (small > 0) mpi_sum_in_place(packed, small);
      small = 0;
      for (size_t t = set.count(); t-- > 0;) {
        const int64_t n = set.elements(t);
        if (n >= kInPlaceMin) continue;
        std::copy_n(packed + small, n, set.tensor(t));
        small += n;
      }
      return;
    }
  }
}

LibhvdStep::LibhvdStep(const TensorSet& set, bool grouped, int64_t bucket_bytes)
    : grouped_(grouped), bucket_bytes_(bucket_bytes) {
  const size_t tensors = set.count();
  if (bucket_bytes > 0) {
    // Submission order is the last tensor first; a bucket closes when the next tensor
    // would take it past the cap (a larger tensor makes a bucket of its own), as
    // DistributedOptimizer lays its buckets out.
    const int64_t cap = bucket_bytes / static_cast<int64_t>(sizeof(float));
    for (size_t t = tensors; t-- > 0;) {
      const int64_t n = set.elements(t);
      if (buckets_.empty() || buckets_.back().elements + n > cap) buckets_.push_back({t, 0});
      buckets_.back().elements += n;
    }
    for (size_t b = 0; b < buckets_.size(); ++b)
      names_.push_back("hvd-bench.bucket." + std::to_string(b));
  } else {
    names_.reserve(tensors);
    for (size_t t = 0; t < tensors; ++t) names_.push_back("hvd-bench.grad." + std::to_string(t));
  }
  handles_.resize(names_.size());
}

void LibhvdStep::run_grouped(TensorSet& set) {
  sends_.clear();
  recvs_.clear();
  counts_.clear();
  for (size_t t = set.count(); t-- > 0;) {  // the backward pass's order, as below
    sends_.push_back(set.tensor(t));
    recvs_.push_back(set.tensor(t));
    counts_.push_back(set.elements(t));
  }
  hvd_handle_t handle = 0;
  check_hvd(hvd_grouped_allreduce_async(static_cast<int>(set.count()), sends_.data(),
                                        recvs_.data(), counts_.data(), HVD_FLOAT32, HVD_OP_SUM,
                                        "hvd-bench.grads", nullptr, &handle),
            "hvd_grouped_allreduce_async");
  check_hvd(hvd_wait(handle), "hvd_wait");
}

std::string LibhvdStep::handover() const {
  if (grouped_) return "in one grouped call a step";
  if (buckets_.empty()) return "in a call per tensor";
  char text[96];
  std::snprintf(text, sizeof text, "in a call per bucket of up to %.4g MiB (%zu calls)",
                static_cast<double>(bucket_bytes_) / 1048576.0, buckets_.size());
  return text;
}

void LibhvdStep::run_buckets(TensorSet& set) {
  for (size_t b = 0; b < buckets_.size(); ++b) {
    float* start = set.tensor(buckets_[b].first);
    hvd_handle_t handle = 0;
    check_hvd(hvd_allreduce_async(start, start, buckets_[b].elements, HVD_FLOAT32, HVD_OP_SUM,
                                  names_[b].c_str(), nullptr, &handle),
              "hvd_allreduce_async");
    handles_[b] = handle;
  }
  for (long long handle : handles_) check_hvd(hvd_wait(handle), "hvd_wait");
}

void LibhvdStep::run(TensorSet& set) {
  if (grouped_) return run_grouped(set);
  if (!buckets_.empty()) return run_buckets(set);
  // A backward pass produces the last layer's gradient first.
  for (size_t t = set.count(); t-- > 0;) {
    hvd_handle_t handle = 0;
    check_hvd(hvd_allreduce_async(set.tensor(t), set.tensor(t), set.elements(t), HVD_FLOAT32,
                                  HVD_OP_SUM, names_[t].c_str(), nullptr, &handle),
              "hvd_allreduce_async");
    handles_[t] = handle;
  }
  for (size_t t = set.count(); t-- > 0;) check_hvd(hvd_wait(handles_[t]), "hvd_wait");
}

}  // namespace hvdbench
