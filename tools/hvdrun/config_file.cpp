#include "config_file.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <strings.h>
#include <type_traits>

#ifdef HVDRUN_HAVE_YAML
#include <yaml.h>
#endif

#include "cli_compat.h"
#include "env_mapping.h"

namespace hvdrun {
namespace {

std::string where(const std::string& file, int line) {
  return "--config-file " + file + ", line " + std::to_string(line);
}

std::optional<bool> parse_bool(const std::string& v) {
  // YAML 1.1's booleans, as PyYAML (Horovod's reader) takes them.
  for (const char* t : {"true", "yes", "on", "1"})
    if (strcasecmp(v.c_str(), t) == 0) return true;
  for (const char* f : {"false", "no", "off", "0"})
    if (strcasecmp(v.c_str(), f) == 0) return false;
  return std::nullopt;
}

std::optional<double> parse_double(const std::string& v) {
  if (v.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  double d = std::strtod(v.c_str(), &end);
  if (errno != 0 || *end != '\0') return std::nullopt;
  return d;
}

std::optional<int64_t> parse_int(const std::string& v) {
  if (v.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long long n = std::strtoll(v.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return std::nullopt;
  return n;
}

enum class Kind { Number, Count, Bool, Text };

// A key of the file: its flag (for precedence and messages), the flag that turns it
// off (booleans with a --no- form), and how to store it.
struct Key {
  const char* section;
  const char* key;
  const char* flag;
  const char* off_flag;  // nullptr if none
  Kind kind;
  std::function<void(TuningOptions&, const std::string&)> set;
};

template <typename T>
std::function<void(TuningOptions&, const std::string&)> store(std::optional<T> TuningOptions::*field) {
  return [field](TuningOptions& t, const std::string& v) {
    if constexpr (std::is_same_v<T, double>) t.*field = *parse_double(v);
    else if constexpr (std::is_same_v<T, int64_t>) t.*field = *parse_int(v);
    else if constexpr (std::is_same_v<T, bool>) t.*field = *parse_bool(v);
    else t.*field = v;
  };
}

const std::vector<Key>& keys() {
  using T = TuningOptions;
  static const std::vector<Key> table = {
      {"params", "fusion_threshold_mb", "--fusion-threshold-mb", nullptr, Kind::Number,
       store(&T::fusion_threshold_mb)},
      {"params", "cycle_time_ms", "--cycle-time-ms", nullptr, Kind::Number, store(&T::cycle_time_ms)},
      {"params", "cache_capacity", "--cache-capacity", nullptr, Kind::Count, store(&T::cache_capacity)},
      {"params", "hierarchical_allreduce", "--hierarchical-allreduce",
       "--no-hierarchical-allreduce", Kind::Bool, store(&T::hierarchical_allreduce)},
      {"params", "hierarchical_allgather", "--hierarchical-allgather",
       "--no-hierarchical-allgather", Kind::Bool, store(&T::hierarchical_allgather)},
      {"autotune", "enabled", "--autotune", "--no-autotune", Kind::Bool,
       [](T& t, const std::string& v) { t.autotune = *parse_bool(v); }},
      {"autotune", "log_file", "--autotune-log-file", nullptr, Kind::Text, store(&T::autotune_log_file)},
      {"autotune", "warmup_samples", "--autotune-warmup-samples", nullptr, Kind::Count,
       store(&T::autotune_warmup_samples)},
      {"autotune", "steps_per_sample", "--autotune-steps-per-sample", nullptr, Kind::Count,
       store(&T::autotune_steps_per_sample)},
      {"autotune", "bayes_opt_max_samples", "--autotune-bayes-opt-max-samples", nullptr,
       Kind::Count, store(&T::autotune_bayes_opt_max_samples)},
      {"autotune", "gaussian_process_noise", "--autotune-gaussian-process-noise", nullptr,
       Kind::Number, store(&T::autotune_gaussian_process_noise)},
      {"timeline", "filename", "--timeline-filename", nullptr, Kind::Text, store(&T::timeline_filename)},
      {"timeline", "mark_cycles", "--timeline-mark-cycles", "--no-timeline-mark-cycles", Kind::Bool,
       [](T& t, const std::string& v) { t.timeline_mark_cycles = *parse_bool(v); }},
      {"stall_check", "enabled", "--stall-check", "--no-stall-check", Kind::Bool,
       [](T& t, const std::string& v) { t.no_stall_check = !*parse_bool(v); }},
      {"stall_check", "warning_time_seconds", "--stall-check-warning-time-seconds", nullptr,
       Kind::Number, store(&T::stall_check_warning_time_seconds)},
      {"stall_check", "shutdown_time_seconds", "--stall-check-shutdown-time-seconds", nullptr,
       Kind::Number, store(&T::stall_check_shutdown_time_seconds)},
      {"library_options", "thread_affinity", "--thread-affinity", nullptr, Kind::Text,
       store(&T::thread_affinity)},
      {"logging", "level", "--log-level", nullptr, Kind::Text, store(&T::log_level)},
  };
  return table;
}

// Keys libhvd has no use for, with the flag whose note they get. A flag-like key
// notes only when true (false is the default).
struct IneffectiveKey {
  const char* section;
  const char* key;
  const char* flag;
  bool is_switch;
};
const IneffectiveKey kIneffectiveKeys[] = {
    {"library_options", "mpi_threads_disable", "--mpi-threads-disable", true},
    {"library_options", "num_nccl_streams", "--num-nccl-streams", false},
    {"library_options", "gloo_timeout_seconds", "--gloo-timeout-seconds", false},
    {"library_options", "ccl_bgt_affinity", "--ccl-bgt-affinity", false},
    {"logging", "with_timestamp", "--log-with-timestamp", true},
};

std::string keys_of(const std::string& section) {
  std::string list;
  for (const Key& k : keys())
    if (section == k.section) list += (list.empty() ? "" : ", ") + std::string(k.key);
  for (const IneffectiveKey& k : kIneffectiveKeys)
    if (section == k.section) list += (list.empty() ? "" : ", ") + std::string(k.key);
  return list;
}

const char* kSections = "params, autotune, timeline, stall_check, library_options, logging, controller";

Status check_value(const Key& k, const std::string& v) {
  switch (k.kind) {
    case Kind::Number:
      if (!parse_double(v)) return Status::failure("expects a number, got '" + v + "'");
      break;
    case Kind::Count:
      if (!parse_int(v)) return Status::failure("expects a whole number, got '" + v + "'");
      break;
    case Kind::Bool:
      if (!parse_bool(v)) return Status::failure("expects true or false, got '" + v + "'");
      break;
    case Kind::Text:
      break;
  }
  // The flag's own range checks, on this value alone.
  TuningOptions alone;
  k.set(alone, v);
  auto checked = tuning_environment(alone);
  if (!checked) {
    // "--cycle-time-ms -1: must be ..." without the flag: the key names it here.
    std::string why = checked.error();
    const size_t colon = why.find(": ");
    return Status::failure(colon == std::string::npos ? why : why.substr(colon + 2));
  }
  return success();
}

}  // namespace

Status apply_config(const std::vector<ConfigEntry>& entries, const std::string& file,
                    const std::function<bool(const std::string&)>& given_flag, LaunchOptions& o) {
  for (const ConfigEntry& e : entries) {
    const std::string at = where(file, e.line);
    const std::string name = e.section + "." + e.key;
    if (e.section == "controller") {
      // A top-level scalar: "controller: mpi".
      if (e.null || strcasecmp(e.value.c_str(), "mpi") == 0) continue;
      if (strcasecmp(e.value.c_str(), "gloo") == 0)
        return Status::failure(at + ": controller: gloo: " + *refused_flag("--gloo"));
      return Status::failure(at + ": controller: '" + e.value + "' is not a controller (mpi or gloo)");
    }
    const Key* key = nullptr;
    for (const Key& k : keys())
      if (e.section == k.section && e.key == k.key) key = &k;
    if (!key) {
      bool known = false;
      for (const IneffectiveKey& k : kIneffectiveKeys) {
        if (e.section != k.section || e.key != k.key) continue;
        known = true;
        if (e.null || given_flag(k.flag)) break;
        if (k.is_switch) {
          auto on = parse_bool(e.value);
          if (!on) return Status::failure(at + ": " + name + " expects true or false, got '" + e.value + "'");
          if (!*on) break;
        }
        o.notices.push_back(name + " (" + at + ") has no effect: " + *ineffective_flag_reason(k.flag));
      }
      if (known) continue;
      const std::string section_keys = keys_of(e.section);
      if (section_keys.empty())
        return Status::failure(at + ": unknown section '" + e.section + "' (Horovod's are " +
                               kSections + ")");
      return Status::failure(at + ": unknown key '" + e.key + "' in " + e.section + " (its keys are " +
                             section_keys + ")");
    }
    if (e.null) continue;  // as in Horovod: the default stays
    Status valid = check_value(*key, e.value);
    if (!valid) return Status::failure(at + ": " + name + ": " + valid.error());
    // The command line wins.
    if (given_flag(key->flag) || (key->off_flag && given_flag(key->off_flag))) continue;
    key->set(o.tuning, e.value);
  }
  return success();
}

#ifdef HVDRUN_HAVE_YAML

bool config_files_supported() { return true; }

namespace {

std::string scalar_text(yaml_node_t* n) {
  return std::string(reinterpret_cast<const char*>(n->data.scalar.value), n->data.scalar.length);
}

// YAML's null: an empty plain scalar, ~ or null.
bool is_null(yaml_node_t* n) {
  if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return false;
  const std::string v = scalar_text(n);
  return v.empty() || v == "~" || v == "null" || v == "Null" || v == "NULL";
}

int line_of(yaml_node_t* n) { return static_cast<int>(n->start_mark.line) + 1; }

}  // namespace

Result<std::vector<ConfigEntry>> read_config_file(const std::string& path) {
  using R = Result<std::vector<ConfigEntry>>;
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return R::failure("--config-file " + path + ": cannot read it (" + std::strerror(errno) + ")");
  yaml_parser_t parser;
  yaml_parser_initialize(&parser);
  yaml_parser_set_input_file(&parser, f);
  yaml_document_t doc;
  const bool loaded = yaml_parser_load(&parser, &doc) != 0;
  std::string parse_error;
  if (!loaded)
    parse_error = where(path, static_cast<int>(parser.problem_mark.line) + 1) + ": not valid YAML (" +
                  (parser.problem ? parser.problem : "parse error") + ")";
  yaml_parser_delete(&parser);
  std::fclose(f);
  if (!loaded) return R::failure(parse_error);

  std::vector<ConfigEntry> entries;
  std::string error;
  yaml_node_t* root = yaml_document_get_root_node(&doc);
  if (root && !is_null(root)) {
    if (root->type != YAML_MAPPING_NODE) {
      error = where(path, line_of(root)) + ": expected Horovod's sections (params:, autotune:, ...)";
    } else {
      for (auto* pair = root->data.mapping.pairs.start; error.empty() && pair < root->data.mapping.pairs.top; ++pair) {
        yaml_node_t* k = yaml_document_get_node(&doc, pair->key);
        yaml_node_t* v = yaml_document_get_node(&doc, pair->value);
        if (k->type != YAML_SCALAR_NODE) {
          error = where(path, line_of(k)) + ": a section name must be a plain word";
          break;
        }
        const std::string section = scalar_text(k);
        if (v->type == YAML_SCALAR_NODE) {
          // controller: mpi is the one top-level value; a section left empty is fine.
          if (section == "controller" || !is_null(v)) {
            entries.push_back({section, "", scalar_text(v), is_null(v), line_of(k)});
            if (section != "controller" && !keys_of(section).empty())
              error = where(path, line_of(k)) + ": " + section + " must hold keys (" + keys_of(section) + ")";
          }
          continue;
        }
        if (v->type != YAML_MAPPING_NODE) {
          error = where(path, line_of(v)) + ": " + section + " must hold keys, not a list";
          break;
        }
        for (auto* kv = v->data.mapping.pairs.start; kv < v->data.mapping.pairs.top; ++kv) {
          yaml_node_t* key = yaml_document_get_node(&doc, kv->key);
          yaml_node_t* value = yaml_document_get_node(&doc, kv->value);
          if (key->type != YAML_SCALAR_NODE || value->type != YAML_SCALAR_NODE) {
            error = where(path, line_of(key)) + ": " + section + "." +
                    (key->type == YAML_SCALAR_NODE ? scalar_text(key) : "?") +
                    " must be a single value";
            break;
          }
          entries.push_back({section, scalar_text(key), scalar_text(value), is_null(value), line_of(key)});
        }
      }
    }
  }
  yaml_document_delete(&doc);
  if (!error.empty()) return R::failure(error);
  // A top-level "section: value" other than controller reaches apply_config as an
  // unknown section, which names the known ones.
  for (auto& e : entries)
    if (e.key.empty() && e.section != "controller") e.key = "(value)";
  return entries;
}

#else

bool config_files_supported() { return false; }

Result<std::vector<ConfigEntry>> read_config_file(const std::string& path) {
  return Result<std::vector<ConfigEntry>>::failure(
      "--config-file " + path + ": this hvdrun was built without libyaml, so it cannot read "
      "Horovod's YAML files; give each parameter as its flag (fusion_threshold_mb: 32 is "
      "--fusion-threshold-mb 32), or rebuild libhvd with libyaml-dev installed");
}

#endif

}  // namespace hvdrun
