#include "rank_exit.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace hvdrun {

std::string format_rank_exit(const RankExit& e) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "rank=%d code=%d signal=%d time=%.6f pid=%ld host=%s\n", e.rank,
                e.exit_code, e.signal, e.time, e.pid, e.host.empty() ? "?" : e.host.c_str());
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
  if (e.signal) {
    const char* name = sigabbrev_np(e.signal);
    return who + " was killed by signal " + std::to_string(e.signal) +
           (name ? std::string(" (SIG") + name + ")" : "");
  }
  return who + " exited with status " + std::to_string(e.exit_code);
}

std::string StderrRelay::feed(std::string_view chunk) {
  std::string out;
  held_.append(chunk);
  size_t pos = 0;
  while (pos < held_.size()) {
    const size_t marker = held_.find(kRankExitMarker[0], pos);
    if (marker == std::string::npos) {
      out.append(held_, pos, std::string::npos);
      pos = held_.size();
      break;
    }
    out.append(held_, pos, marker - pos);
    const std::string_view rest = std::string_view(held_).substr(marker);
    const size_t compare = std::min(rest.size(), kRankExitMarker.size());
    if (rest.substr(0, compare) != kRankExitMarker.substr(0, compare)) {
      out.push_back(held_[marker]);  // the byte only, not a marker
      pos = marker + 1;
      continue;
    }
    const size_t newline = rest.find('\n');
    if (newline == std::string_view::npos) {
      pos = marker;  // hold it until its line is complete
      break;
    }
    take_marker(rest.substr(kRankExitMarker.size(), newline - kRankExitMarker.size()));
    pos = marker + newline + 1;
  }
  held_.erase(0, pos);
  return out;
}

std::string StderrRelay::finish() {
  std::string out;
  out.swap(held_);
  return out;
}

void StderrRelay::take_marker(std::string_view fields) {
  auto e = parse_rank_exit(fields);
  if (!e || !e->failed()) return;
  // The earliest exit, not the first marker to arrive: nodes' streams are relayed
  // independently, and a rank killed in the cleanup may be heard from first.
  if (!first_ || e->time < first_->time) {
    if (!first_) new_failure_ = true;
    first_ = std::move(e);
  }
}

bool StderrRelay::take_new_failure() {
  const bool was = new_failure_;
  new_failure_ = false;
  return was;
}

}  // namespace hvdrun
