// libFuzzer target for the configuration parser: the input is an environment, one
// NAME=VALUE per line, read through load_params; each line's value also goes through
// every value parser directly. Any text must give a value or a warning, never a
// crash; every knob must then print as text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "params/params.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string> env;
  size_t at = 0;
  while (at <= text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(at, end - at);
    size_t eq = line.find('=');
    // Environment values are C strings: an embedded NUL ends them.
    std::string value = eq == std::string::npos ? line : line.substr(eq + 1);
    value = value.c_str();
    if (eq != std::string::npos) env[line.substr(0, eq)] = value;

    bool b;
    int64_t i;
    double d;
    hvd::LogLevel level;
    (void)hvd::parse_bool(value.c_str(), &b);
    (void)hvd::parse_int(value.c_str(), &i);
    (void)hvd::parse_double(value.c_str(), &d);
    if (hvd::parse_bytes(value.c_str(), &i) && i < 0) std::abort();  // sizes are never negative
    (void)hvd::parse_log_level(value.c_str(), &level);
    at = end + 1;
  }
  auto lookup = [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  std::vector<std::string> warnings;
  hvd::Params params = hvd::load_params(lookup, &warnings);
  for (const std::string& w : warnings)
    if (w.empty()) std::abort();  // a warning always says something
  for (const hvd::ParamInfo& info : hvd::param_registry()) {
    std::string out;
    if (!hvd::param_value_text(params, info.name, &out)) std::abort();
  }
  return 0;
}
