#include "rank_exit.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace hvdrun {

namespace {

const char* mpi_word(RankMpi m) {
  return m == RankMpi::Hvd ? "hvd" : m == RankMpi::None ? "none" : "unknown";
}

}  // namespace

std::string format_rank_exit(const RankExit& e) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "rank=%d code=%d signal=%d time=%.6f pid=%ld host=%s mpi=%s\n",
                e.rank, e.exit_code, e.signal, e.time, e.pid, e.host.empty() ? "?" : e.host.c_str(),
                mpi_word(e.mpi));
  return std::string(kRankExitMarker) + buf;
}

std::optional<RankExit> parse_rank_exit(std::string_view fields) {
  RankExit e;
  std::istringstream in{std::string(fields)};
  std::string word;
  int seen = 0;
  while (in >> word) {
    const size_t eq = word.find('=');
    if (eq == std::string::npos) return std::nullopt;
    const std::string key = word.substr(0, eq), value = word.substr(eq + 1);
    char* end = nullptr;
    if (key == "host") {
      e.host = value;
      continue;
    }
    if (key == "mpi") {
      e.mpi = value == "hvd" ? RankMpi::Hvd : value == "none" ? RankMpi::None : RankMpi::Unknown;
      continue;
    }
    const double number = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0') return std::nullopt;
    if (key == "rank") e.rank = static_cast<int>(number);
    else if (key == "code") e.exit_code = static_cast<int>(number);
    else if (key == "signal") e.signal = static_cast<int>(number);
    else if (key == "time") e.time = number;
    else if (key == "pid") e.pid = static_cast<long>(number);
    else continue;  // a later version's field
    ++seen;
  }
  if (seen < 5) return std::nullopt;
  return e;
}

std::string describe_rank_exit(const RankExit& e) {
  std::string who = e.rank >= 0 ? "rank " + std::to_string(e.rank) : std::string("a rank");
  who += " (pid " + std::to_string(e.pid) + (e.host.empty() || e.host == "?" ? "" : " on " + e.host) + ")";
  if (e.left_peers_waiting)
    return who + " exited with status 0 without calling hvd_init, while other ranks had "
                 "begun it; they would wait for it in MPI_Init for ever";
  if (e.signal) {
    const char* name = sigabbrev_np(e.signal);
    return who + " was killed by signal " + std::to_string(e.signal) +
           (name ? std::string(" (SIG") + name + ")" : "");
  }
  return who + " exited with status " + std::to_string(e.exit_code);
}

size_t rank_prefix_length(std::string_view t, bool* incomplete) {
  *incomplete = false;
  size_t i = 0;
  auto at_end = [&] { return i >= t.size(); };
  auto digits = [&] {
    size_t from = i;
    while (!at_end() && t[i] >= '0' && t[i] <= '9' && i - from < 10) ++i;
    return i > from;
  };
  if (t.empty()) {
    *incomplete = true;
    return 0;
  }
  if (t[i++] != '[') return 0;
  if (!digits()) {
    *incomplete = at_end();
    return 0;
  }
  if (at_end()) return *incomplete = true, 0;
  if (t[i] == ']') {  // Hydra: "[3] "
    if (++i >= t.size()) return *incomplete = true, 0;
    return t[i] == ' ' ? i + 1 : 0;
  }
  if (t[i++] != ',') return 0;  // Open MPI: "[1,3]<stderr>:"
  if (!digits()) return *incomplete = at_end(), 0;
  if (at_end()) return *incomplete = true, 0;
  if (t[i++] != ']') return 0;
  if (at_end()) return *incomplete = true, 0;
  if (t[i++] != '<') return 0;
  while (!at_end() && t[i] >= 'a' && t[i] <= 'z') ++i;
  if (at_end()) return *incomplete = true, 0;
  if (t[i++] != '>') return 0;
  if (at_end()) return *incomplete = true, 0;
  return t[i] == ':' ? i + 1 : 0;
}

std::string StderrRelay::feed(std::string_view chunk) {
  std::string out;
  held_.append(chunk);
  size_t pos = 0;  // held_ before pos is passed on or dropped
  auto pass = [&](size_t to) {
    if (to > pos) {
      out.append(held_, pos, to - pos);
      line_start_ = held_[to - 1] == '\n';
    }
    pos = to;
  };
  while (pos < held_.size()) {
    // A candidate: a prefix at a line start or any '[' (Open MPI tags every chunk, so
    // a marker after a partial line comes with one), or the marker's first byte.
    const size_t c = held_.find_first_of(std::string_view("[\x1e", 2), pos);
    if (c == std::string::npos) {
      pass(held_.size());
      break;
    }
    pass(c);
    const std::string_view rest = std::string_view(held_).substr(c);
    bool incomplete = false;
    const size_t prefix = rest[0] == '[' ? rank_prefix_length(rest, &incomplete) : 0;
    if (incomplete) break;  // hold it until more arrives
    if (rest[0] == '[' && prefix == 0) {
      pass(c + 1);
      continue;
    }
    const std::string_view after = rest.substr(prefix);
    const size_t compare = std::min(after.size(), kMarkerStart.size());
    if (after.substr(0, compare) != kMarkerStart.substr(0, compare)) {
      pass(c + prefix + 1);  // a prefix (or the byte) of an ordinary line
      continue;
    }
    const size_t newline = after.find('\n');
    if (compare < kMarkerStart.size() || newline == std::string_view::npos) break;  // hold
    watch_.take_marker(after.substr(0, newline));
    // The line goes, prefix included; after a partial line, the line is still ended.
    if (!line_start_) {
      out.push_back('\n');
      line_start_ = true;
    }
    pos = c + prefix + newline + 1;
  }
  held_.erase(0, pos);
  return out;
}

std::string StderrRelay::finish() {
  std::string out;
  out.swap(held_);
  return out;
}

void JobWatch::take_marker(std::string_view line) {
  if (line.substr(0, kRankExitMarker.size()) == kRankExitMarker) {
    if (auto e = parse_rank_exit(line.substr(kRankExitMarker.size()))) {
      heard(e->rank);
      rank_exited(*e);
    }
  } else if (line.substr(0, kRankMpiMarker.size()) == kRankMpiMarker) {
    std::string fields(line.substr(kRankMpiMarker.size()));
    int rank = -1;
    if (std::sscanf(fields.c_str(), "rank=%d", &rank) == 1) {
      heard(rank);
      rank_began_init(rank);
    }
  } else if (line.substr(0, kRankAliveMarker.size()) == kRankAliveMarker) {
    std::string fields(line.substr(kRankAliveMarker.size()));
    int rank = -1;
    if (std::sscanf(fields.c_str(), "rank=%d", &rank) == 1) {
      alive_markers_ = true;
      heard(rank);
    }
  }
}

namespace {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

void JobWatch::heard(int rank) {
  const double now = now_seconds ? now_seconds() : steady_seconds();
  if (started_ < 0) started_ = now;
  if (rank >= 0) heard_[rank] = now;
}

std::vector<int> JobWatch::silent_since(double since, int64_t num_proc) const {
  std::vector<int> silent;
  if (!alive_markers_ || exited_.empty()) return silent;
  for (int rank = 0; rank < num_proc; ++rank) {
    if (exited_.count(rank)) continue;
    auto it = heard_.find(rank);
    if ((it == heard_.end() ? started_ : it->second) < since) silent.push_back(rank);
  }
  return silent;
}

void JobWatch::rank_exited(const RankExit& e) {
  if (e.rank >= 0) exited_.insert(e.rank);
  if (e.failed()) {
    failure(e);
  } else if (e.mpi == RankMpi::None && e.rank >= 0 && (!early_ || e.time < early_->time)) {
    early_ = e;
  }
  check_early_exit();
}

void JobWatch::rank_began_init(int rank) {
  if (rank < 0) return;
  initializing_.insert(rank);
  check_early_exit();
}

void JobWatch::check_early_exit() {
  if (!early_ || early_->left_peers_waiting) return;
  for (int r : initializing_) {
    if (r != early_->rank && !exited_.count(r)) {
      early_->left_peers_waiting = true;
      failure(*early_);
      return;
    }
  }
}

void JobWatch::failure(const RankExit& e) {
  failures_.insert(std::upper_bound(failures_.begin(), failures_.end(), e,
                                    [](const RankExit& a, const RankExit& b) { return a.time < b.time; }),
                   e);
  // The earliest exit, not the first marker to arrive: nodes' streams are relayed
  // independently, and a rank killed in the cleanup may be heard from first.
  if (!first_ || e.time < first_->time) {
    if (!first_) new_failure_ = true;
    first_ = e;
  }
}

bool JobWatch::take_new_failure() {
  const bool was = new_failure_;
  new_failure_ = false;
  return was;
}

}  // namespace hvdrun
