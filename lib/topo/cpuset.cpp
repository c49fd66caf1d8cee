#include "topo/cpuset.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>

namespace hvd {

CpuSet::CpuSet(std::vector<int> cpus) : cpus_(std::move(cpus)) {
  std::sort(cpus_.begin(), cpus_.end());
  cpus_.erase(std::unique(cpus_.begin(), cpus_.end()), cpus_.end());
}

namespace {

bool parse_index(const std::string& text, size_t* pos, int* out) {
  size_t start = *pos;
  long value = 0;
  while (*pos < text.size() && text[*pos] >= '0' && text[*pos] <= '9') {
    value = value * 10 + (text[*pos] - '0');
    if (value > 1 << 20) return false;  // far beyond any machine's CPU count
    ++*pos;
  }
  if (*pos == start) return false;
  *out = static_cast<int>(value);
  return true;
}

}  // namespace

bool CpuSet::parse(const std::string& text, CpuSet* out) {
  std::vector<int> cpus;
  size_t pos = 0;
  if (text.empty()) {
    *out = CpuSet();
    return true;
  }
  while (true) {
    int first = 0, last = 0;
    if (!parse_index(text, &pos, &first)) return false;
    last = first;
    if (pos < text.size() && text[pos] == '-') {
      ++pos;
      if (!parse_index(text, &pos, &last) || last < first) return false;
    }
    for (int c = first; c <= last; ++c) cpus.push_back(c);
    if (pos == text.size()) break;
    if (text[pos] != ',') return false;
    ++pos;
  }
  *out = CpuSet(std::move(cpus));
  return true;
}

std::string CpuSet::to_string() const {
  std::string text;
  for (size_t i = 0; i < cpus_.size();) {
    size_t j = i;
    while (j + 1 < cpus_.size() && cpus_[j + 1] == cpus_[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += std::to_string(cpus_[i]);
    if (j > i) text += '-' + std::to_string(cpus_[j]);
    i = j + 1;
  }
  return text;
}

bool CpuSet::contains(int cpu) const {
  return std::binary_search(cpus_.begin(), cpus_.end(), cpu);
}

bool CpuSet::includes(const CpuSet& other) const {
  return std::includes(cpus_.begin(), cpus_.end(), other.cpus_.begin(), other.cpus_.end());
}

CpuSet CpuSet::intersect(const CpuSet& other) const {
  CpuSet result;
  std::set_intersection(cpus_.begin(), cpus_.end(), other.cpus_.begin(), other.cpus_.end(),
                        std::back_inserter(result.cpus_));
  return result;
}

std::vector<uint64_t> CpuSet::to_words(size_t words) const {
  std::vector<uint64_t> mask(words, 0);
  for (int cpu : cpus_) {
    const size_t word = static_cast<size_t>(cpu) / 64;
    if (word < words) mask[word] |= uint64_t{1} << (cpu % 64);
  }
  return mask;
}

CpuSet CpuSet::from_words(const std::vector<uint64_t>& words) {
  CpuSet result;
  for (size_t w = 0; w < words.size(); ++w)
    for (int bit = 0; bit < 64; ++bit)
      if (words[w] >> bit & 1) result.cpus_.push_back(static_cast<int>(w * 64) + bit);
  return result;
}

CpuSet CpuSet::unite(const CpuSet& other) const {
  CpuSet result;
  std::set_union(cpus_.begin(), cpus_.end(), other.cpus_.begin(), other.cpus_.end(),
                 std::back_inserter(result.cpus_));
  return result;
}

}  // namespace hvd
