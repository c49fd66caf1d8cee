#include "knobs.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "params/params.h"

namespace hvdinfo {

namespace {

const char* type_name(hvd::ParamType type) {
  switch (type) {
    case hvd::ParamType::Bool: return "bool";
    case hvd::ParamType::Int: return "int";
    case hvd::ParamType::Double: return "number";
    case hvd::ParamType::Bytes: return "bytes";
    case hvd::ParamType::String: return "text";
    case hvd::ParamType::Choice: return "choice";
  }
  return "";
}

std::string default_text(const hvd::ParamInfo& info) {
  return info.default_text[0] ? info.default_text : "(none)";
}

bool agreed(const char* name) {
  const std::vector<const char*>& names = hvd::agreed_param_names();
  return std::any_of(names.begin(), names.end(),
                     [name](const char* n) { return std::strcmp(n, name) == 0; });
}

}  // namespace

std::string knobs_text() {
  std::vector<std::string> warnings;
  const hvd::Params params = hvd::load_params_from_env(&warnings);
  std::string out;
  for (const std::string& w : warnings) std::fprintf(stderr, "hvd-info: warning: %s\n", w.c_str());
  for (const std::string& w : hvd::unknown_env_param_warnings())
    std::fprintf(stderr, "hvd-info: warning: %s\n", w.c_str());
  const hvd::ParamInfo* previous = nullptr;
  for (const hvd::ParamInfo& info : hvd::param_registry()) {
    if (!previous || previous->group != info.group) {
      out += std::string("## ") + hvd::param_group_title(info.group) + ": " +
             hvd::param_group_blurb(info.group) + "\n\n";
    }
    previous = &info;
    std::string value;
    hvd::param_value_text(params, info.name, &value);
    out += std::string("# ") + info.description + "\n";
    out += std::string("# ") + type_name(info.type) + ", default " + default_text(info);
    if (agreed(info.name)) out += ", rank 0's value on every rank";
    out += "\n" + std::string(info.name) + "=" + value + "\n\n";
  }
  return out;
}

std::string knobs_markdown() {
  std::string out;
  const hvd::ParamInfo* previous = nullptr;
  for (const hvd::ParamInfo& info : hvd::param_registry()) {
    // The registry lists the knobs group by group: a heading and a table for each.
    if (!previous || previous->group != info.group) {
      if (previous) out += "\n";
      out += std::string("### ") + hvd::param_group_title(info.group) + "\n\n" +
             hvd::param_group_blurb(info.group) + "\n\n" +
             "| variable | type | default | rank 0's | meaning |\n"
             "| --- | --- | --- | --- | --- |\n";
    }
    previous = &info;
    std::string meaning = info.description;
    // A '|' inside a table cell ends it: the choices are written a|b|c.
    std::string escaped;
    for (char c : meaning) escaped += c == '|' ? std::string("\\|") : std::string(1, c);
    out += std::string("| `") + info.name + "` | " + type_name(info.type) + " | " +
           default_text(info) + " | " + (agreed(info.name) ? "yes" : "") + " | " + escaped +
           " |\n";
  }
  return out;
}

}  // namespace hvdinfo
