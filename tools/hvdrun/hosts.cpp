#include "hosts.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hvdrun {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Printable form of a possibly binary string for messages.
std::string quoted(std::string_view s) {
  std::string out = "'";
  for (unsigned char c : s.substr(0, 80)) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > 80) out += "...";
  return out + "'";
}

Result<int64_t> parse_slots(std::string_view text, const std::string& what) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ptr != end || ec == std::errc::invalid_argument)
    return Result<int64_t>::failure(what + ": slots must be a positive whole number, not " +
                                    quoted(text));
  if (ec == std::errc::result_out_of_range || value > kMaxSlotsPerHost)
    return Result<int64_t>::failure(what + ": " + quoted(text) + " slots is more than the " +
                                    "limit of " + std::to_string(kMaxSlotsPerHost));
  if (value < 1)
    return Result<int64_t>::failure(what + ": slots must be at least 1, not " + quoted(text));
  return value;
}

// Adds host with slots to list, merging a repeated host into its first entry.
Status add_host(HostList& list, std::string_view host, int64_t slots, std::string_view where) {
  for (auto& entry : list) {
    if (entry.host == host) {
      entry.slots += slots;
      if (entry.slots > kMaxSlotsPerHost)
        return Status::failure(std::string(where) + ": host " + quoted(host) + " has more than " +
                               std::to_string(kMaxSlotsPerHost) + " slots in all");
      return success();
    }
  }
  if (list.size() >= kMaxHosts)
    return Status::failure(std::string(where) + ": more than " + std::to_string(kMaxHosts) +
                           " hosts");
  list.push_back({std::string(host), slots});
  return success();
}

// Parses "host" or "host:N" into list.
Status parse_host_entry(HostList& list, std::string_view entry, std::string_view where) {
  std::string_view host = entry;
  int64_t slots = 1;
  size_t colon = entry.find(':');
  if (colon != std::string_view::npos) {
    host = entry.substr(0, colon);
    auto parsed = parse_slots(entry.substr(colon + 1), std::string(where) + ", host " +
                                                           quoted(host));
    if (!parsed) return Status::failure(parsed.error());
    slots = parsed.value();
  }
  std::string problem = host_name_problem(host);
  if (!problem.empty()) return Status::failure(std::string(where) + ": " + problem);
  return add_host(list, host, slots, where);
}

}  // namespace

std::string host_name_problem(std::string_view name) {
  if (name.empty()) return "empty host name";
  if (name.size() > 253) return "host name " + quoted(name) + " is longer than 253 characters";
  size_t label_start = 0;
  for (size_t i = 0; i <= name.size(); ++i) {
    if (i == name.size() || name[i] == '.') {
      std::string_view label = name.substr(label_start, i - label_start);
      if (label.empty()) {
        // A single trailing dot is the fully qualified form.
        if (i == name.size() && i > 0) break;
        return "host name " + quoted(name) + " has an empty label (two dots in a row, or a " +
               "leading dot)";
      }
      if (label.size() > 63)
        return "host name " + quoted(name) + " has a label longer than 63 characters";
      if (label.front() == '-' || label.back() == '-')
        return "host name " + quoted(name) + " has a label that starts or ends with '-'";
      label_start = i + 1;
      continue;
    }
    unsigned char c = static_cast<unsigned char>(name[i]);
    bool valid = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '-' || c == '_';
    if (!valid) {
      char shown[16];
      if (c >= 0x20 && c < 0x7f)
        std::snprintf(shown, sizeof shown, "'%c'", c);
      else
        std::snprintf(shown, sizeof shown, "byte 0x%02x", c);
      return "host name " + quoted(name) + " contains " + shown +
             ", which is not valid in a host name (letters, digits, '-', '_' and '.' are)";
    }
  }
  return "";
}

Result<HostList> parse_host_list(std::string_view text) {
  HostList list;
  std::string_view rest = trim(text);
  if (rest.empty()) return Result<HostList>::failure("-H: the host list is empty");
  while (true) {
    size_t comma = rest.find(',');
    std::string_view entry = trim(rest.substr(0, comma));
    if (entry.empty())
      return Result<HostList>::failure("-H " + quoted(text) +
                                       ": empty entry (two commas in a row, or a comma at an end)");
    Status st = parse_host_entry(list, entry, "-H");
    if (!st) return Result<HostList>::failure(st.error());
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return list;
}

Result<HostList> parse_hostfile(std::string_view text, std::string_view source,
                                std::vector<std::string>* warnings) {
  HostList list;
  size_t line_no = 0;
  std::vector<std::pair<std::string, std::vector<size_t>>> lines_of;  // in order of first use
  auto note_line = [&](std::string_view host, size_t line) {
    auto it = std::find_if(lines_of.begin(), lines_of.end(), [&](const auto& e) { return e.first == host; });
    if (it == lines_of.end()) lines_of.push_back({std::string(host), {line}});
    else it->second.push_back(line);
  };
  while (!text.empty()) {
    ++line_no;
    size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    size_t hash = line.find('#');
    if (hash != std::string_view::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;

    std::string where = std::string(source) + " line " + std::to_string(line_no);
    // Split into whitespace-separated words: the host, then key=value settings.
    std::vector<std::string_view> words;
    while (!line.empty()) {
      size_t end = 0;
      while (end < line.size() && !is_space(line[end])) ++end;
      words.push_back(line.substr(0, end));
      line = trim(line.substr(end));
    }
    std::string_view host = words[0];
    if (words.size() == 1) {
      Status st = parse_host_entry(list, host, where);
      if (!st) return Result<HostList>::failure(st.error());
      note_line(host.substr(0, host.find(':')), line_no);
      continue;
    }
    if (host.find(':') != std::string_view::npos)
      return Result<HostList>::failure(where + ": write either 'host:N' or 'host slots=N', " +
                                       "not both");
    std::string problem = host_name_problem(host);
    if (!problem.empty()) return Result<HostList>::failure(where + ": " + problem);
    int64_t slots = 1;
    bool have_slots = false;
    for (size_t i = 1; i < words.size(); ++i) {
      std::string_view word = words[i];
      size_t eq = word.find('=');
      std::string_view key = word.substr(0, eq);
      if (eq == std::string_view::npos || (key != "slots" && key != "max_slots" &&
                                           key != "max-slots"))
        return Result<HostList>::failure(where + ": expected 'slots=N' after the host name, " +
                                         "found " + quoted(word));
      if (key == "slots") {
        if (have_slots)
          return Result<HostList>::failure(where + ": slots= is given twice");
        auto parsed = parse_slots(word.substr(eq + 1), where + ", host " + quoted(host));
        if (!parsed) return Result<HostList>::failure(parsed.error());
        slots = parsed.value();
        have_slots = true;
      }
    }
    Status st = add_host(list, host, slots, where);
    if (!st) return Result<HostList>::failure(st.error());
    note_line(host, line_no);
  }
  if (list.empty())
    return Result<HostList>::failure(std::string(source) + ": no hosts in the file");
  if (warnings) {
    for (const auto& [host, lines] : lines_of) {
      if (lines.size() < 2) continue;
      std::string numbers;
      for (size_t i = 0; i < lines.size(); ++i)
        numbers += (i == 0 ? "" : i + 1 == lines.size() ? " and " : ", ") + std::to_string(lines[i]);
      const auto& entry = *std::find_if(list.begin(), list.end(), [&](const HostSlots& h) { return h.host == host; });
      warnings->push_back(std::string(source) + ": host " + quoted(host) + " is on lines " + numbers +
                          "; its slots are added up (" + host + ":" + std::to_string(entry.slots) +
                          "). Give each host one line if that is not what you meant");
    }
  }
  return list;
}

Result<HostList> read_hostfile(const std::string& path, std::vector<std::string>* warnings) {
  auto fail = [&](const std::string& why) {
    return Result<HostList>::failure("--hostfile " + path + ": cannot read it (" + why + ")");
  };
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail(std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return fail("it is a directory");
  }
  // A hostfile is small; the bound keeps /dev/zero and the like from eating memory.
  constexpr size_t kMaxHostfileBytes = 16 << 20;
  std::string text;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return fail(std::strerror(err));
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > kMaxHostfileBytes) {
      ::close(fd);
      return fail("larger than 16 MiB");
    }
  }
  ::close(fd);
  return parse_hostfile(text, "hostfile " + path, warnings);
}

int64_t total_slots(const HostList& hosts) {
  int64_t total = 0;
  for (const auto& h : hosts) total += h.slots;
  return total;
}

HostList first_slots(const HostList& hosts, int64_t n) {
  HostList out;
  for (const auto& h : hosts) {
    if (n <= 0) break;
    out.push_back({h.host, std::min(h.slots, n)});
    n -= out.back().slots;
  }
  return out;
}

std::string format_host_list(const HostList& hosts) {
  std::string out;
  for (const auto& h : hosts) {
    if (!out.empty()) out += ',';
    out += h.host + ":" + std::to_string(h.slots);
  }
  return out;
}

}  // namespace hvdrun
