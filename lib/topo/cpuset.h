// A set of logical CPUs (PU OS indices, as the kernel numbers them), kept sorted.
// Plain data so that pinning decisions can be computed and tested without hwloc.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hvd {

class CpuSet {
 public:
  CpuSet() = default;
  explicit CpuSet(std::vector<int> cpus);  // sorts and removes duplicates

  // "0-3,8,10-11" (the kernel's cpulist format, as taskset -c and hwloc-calc print it).
  // False on malformed text; *out is then unchanged.
  static bool parse(const std::string& text, CpuSet* out);
  std::string to_string() const;

  const std::vector<int>& cpus() const { return cpus_; }
  size_t size() const { return cpus_.size(); }
  bool empty() const { return cpus_.empty(); }
  bool contains(int cpu) const;
  bool includes(const CpuSet& other) const;  // other is a subset of this
  CpuSet intersect(const CpuSet& other) const;
  CpuSet unite(const CpuSet& other) const;
  // As a mask of 64-bit words (CPU c is bit c % 64 of word c / 64), the form processes
  // combine their sets in with one MPI_BOR; CPUs beyond `words` words are left out.
  std::vector<uint64_t> to_words(size_t words) const;
  static CpuSet from_words(const std::vector<uint64_t>& words);

  bool operator==(const CpuSet& other) const { return cpus_ == other.cpus_; }
  bool operator!=(const CpuSet& other) const { return cpus_ != other.cpus_; }
  bool operator<(const CpuSet& other) const { return cpus_ < other.cpus_; }

 private:
  std::vector<int> cpus_;
};

}  // namespace hvd
