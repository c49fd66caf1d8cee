// Host lists: `-H host:slots,...` and hostfiles.
//
// Pure functions over text: no I/O except read_hostfile, no exceptions, no global
// state, so that unit tests and fuzzers can call them with any bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "result.h"

namespace hvdrun {

struct HostSlots {
  std::string host;
  int64_t slots = 1;
  bool operator==(const HostSlots&) const = default;
};

using HostList = std::vector<HostSlots>;

// Most slots one host may declare; keeps every sum far from overflow.
inline constexpr int64_t kMaxSlotsPerHost = 1 << 20;
// Most hosts in one list.
inline constexpr size_t kMaxHosts = 1 << 16;

// Empty string if name is a usable host name (letters, digits, '-', '_' and '.',
// labels of 1-63 characters not starting or ending with '-', 253 characters at
// most); otherwise a sentence saying what is wrong with it.
std::string host_name_problem(std::string_view name);

// Parses "h1:2,h2:4,h3" (slots default to 1). A host named twice gets the sum of
// its slots and keeps its first position.
Result<HostList> parse_host_list(std::string_view text);

// Parses a hostfile: one host per line as `host`, `host:N` or `host slots=N`
// (Open MPI's `max_slots=M` is accepted and ignored); `#` starts a comment.
// source names the file in error messages. A host on several lines gets the sum of
// their slots; each such host adds a sentence to *warnings (when given) naming it and
// its line numbers, since a line copied twice by mistake doubles the host's ranks.
Result<HostList> parse_hostfile(std::string_view text, std::string_view source,
                                std::vector<std::string>* warnings = nullptr);

// Reads and parses the hostfile at path.
Result<HostList> read_hostfile(const std::string& path, std::vector<std::string>* warnings = nullptr);

int64_t total_slots(const HostList& hosts);

// The first n slots of hosts, in order: whole hosts, then part of the next one. All of
// them when there are fewer.
HostList first_slots(const HostList& hosts, int64_t n);

// "h1:2,h2:4": the form both Hydra's -hosts and Open MPI's -H accept.
std::string format_host_list(const HostList& hosts);

}  // namespace hvdrun
