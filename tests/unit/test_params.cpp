// The parameter registry: every knob's default, a valid value, and an invalid value
// that keeps the default with a warning naming the variable.
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>


#include "params/params.h"

// After our headers: cmocka.h defines a fail() macro.
extern "C" {
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
}

using namespace hvd;

namespace {

Params load(const std::map<std::string, std::string>& env, std::vector<std::string>* warnings) {
  return load_params(
      [&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      warnings);
}

std::string value_of(const Params& p, const char* name) {
  std::string out;
  assert_true(param_value_text(p, name, &out));
  return out;
}

// A valid value (and how it reads back) and an invalid one, per type.
struct Sample {
  const char* valid;
  const char* read_back;
  const char* invalid;
};

Sample sample_for(const ParamInfo& info) {
  std::string name = info.name;
  if (name == "HOROVOD_LOG_LEVEL") return {"DEBUG", "debug", "loud"};
  if (name == "HOROVOD_GPU_OPERATIONS") return {"MPI", "mpi", "carrier-pigeon"};
  if (name == "HVD_CPU_BIND") return {"numa", "numa", "socket"};
  if (name == "HVD_FUSE_LARGE") return {"Always", "always", "sometimes"};
  if (name == "HVD_FUSED_RING") return {"Never", "never", "sometimes"};
  if (name == "HVD_FAR_CORES") return {"ALWAYS", "always", "far"};
  switch (info.type) {
    case ParamType::Bool: return {"yes", "1", "maybe"};
    case ParamType::Int: return {"7", "7", "seven"};
    case ParamType::Double: return {"2.5", "2.5", "fast"};
    case ParamType::Bytes: return {"64M", "67108864", "lots"};
    case ParamType::String: return {"/tmp/x", "/tmp/x", nullptr};
    case ParamType::Choice: break;
  }
  return {nullptr, nullptr, nullptr};
}

void every_knob_has_default_valid_and_invalid(void**) {
  Params defaults = load({}, nullptr);
  assert_true(param_registry().size() >= 25);
  for (const ParamInfo& info : param_registry()) {
    assert_non_null(info.description);
    assert_true(std::string(info.description).size() > 10);
    // The default as registered is what an empty environment gives.
    std::string shown = value_of(defaults, info.name);
    if (info.type == ParamType::Bool)
      assert_string_equal(shown.c_str(), std::string(info.default_text) == "1" ? "1" : "0");
    else if (info.type != ParamType::Double)
      assert_string_equal(shown.c_str(), info.default_text);

    Sample s = sample_for(info);
    assert_non_null(s.valid);
    std::vector<std::string> warnings;
    Params set = load({{info.name, s.valid}}, &warnings);
    assert_int_equal(warnings.size(), 0);
    assert_string_equal(value_of(set, info.name).c_str(), s.read_back);

    if (!s.invalid) continue;
    warnings.clear();
    Params bad = load({{info.name, s.invalid}}, &warnings);
    assert_int_equal(warnings.size(), 1);
    assert_non_null(strstr(warnings[0].c_str(), info.name));
    assert_non_null(strstr(warnings[0].c_str(), s.invalid));
    assert_non_null(strstr(warnings[0].c_str(), "default"));
    assert_string_equal(value_of(bad, info.name).c_str(), shown.c_str());
  }
}

void horovod_defaults(void**) {
  Params p = load({}, nullptr);
  assert_int_equal(p.fusion_threshold, 128ll << 20);
  assert_true(p.cycle_time_ms == 1.0);
  assert_int_equal(p.cache_capacity, 1024);
  assert_true(p.stall_check_time_s == 60.0);
  assert_true(p.stall_shutdown_time_s == 0.0);
  assert_false(p.hierarchical_allreduce);
  assert_int_equal(p.autotune_warmup_samples, 3);
  assert_int_equal(p.autotune_steps_per_sample, 10);
  assert_int_equal(p.autotune_bayes_opt_max_samples, 20);
  assert_int_equal(static_cast<int>(p.log_level), static_cast<int>(LogLevel::Warning));
}

void booleans_read_true_as_true(void**) {
  for (const char* yes : {"1", "true", "TRUE", "True", "yes", "on"}) {
    bool b = false;
    assert_true(parse_bool(yes, &b));
    assert_true(b);
  }
  for (const char* no : {"0", "false", "no", "off", ""}) {
    bool b = true;
    assert_true(parse_bool(no, &b));
    assert_false(b);
  }
  bool b;
  assert_false(parse_bool("2", &b));
}

void byte_sizes(void**) {
  int64_t v;
  assert_true(parse_bytes("0", &v));
  assert_int_equal(v, 0);
  assert_true(parse_bytes("134217728", &v));
  assert_int_equal(v, 134217728);
  assert_true(parse_bytes("16K", &v));
  assert_int_equal(v, 16384);
  assert_true(parse_bytes("2GiB", &v));
  assert_int_equal(v, 2ll << 30);
  assert_false(parse_bytes("-1", &v));
  assert_false(parse_bytes("1.5M", &v));
  assert_false(parse_bytes("99999999999999999999", &v));
  assert_false(parse_bytes("9000000000G", &v));
}

void ranges_are_enforced(void**) {
  std::vector<std::string> warnings;
  Params p = load({{"HOROVOD_CACHE_CAPACITY", "-4"}, {"HOROVOD_CYCLE_TIME", "-1"}}, &warnings);
  assert_int_equal(warnings.size(), 2);
  assert_int_equal(p.cache_capacity, 1024);
  assert_true(p.cycle_time_ms == 1.0);
}

// Pinning takes its knobs through PinOptions; CUDA_VISIBLE_DEVICES counts as set
// when it has a value or when the environment has it, empty.
void pin_options_from_params(void**) {
  Params p = load({{"HVD_GPU_PINNING", "0"}, {"HVD_CPU_BIND", "numa"},
                   {"HVD_TOPOLOGY_XML", "/x.xml"}, {"HOROVOD_THREAD_AFFINITY", "1,0"},
                   {"CUDA_VISIBLE_DEVICES", "1,0"}},
                  nullptr);
  PinOptions o = pin_options(p);
  assert_false(o.gpu_pinning);
  assert_true(o.cpu_bind == CpuBind::Numa);
  assert_string_equal(o.topology_xml.c_str(), "/x.xml");
  assert_string_equal(o.thread_affinity.c_str(), "1,0");
  assert_true(o.cuda_visible_devices && *o.cuda_visible_devices == "1,0");

  unsetenv("CUDA_VISIBLE_DEVICES");
  assert_false(pin_options(Params{}).cuda_visible_devices.has_value());
  setenv("CUDA_VISIBLE_DEVICES", "", 1);
  o = pin_options(Params{});
  assert_true(o.cuda_visible_devices && o.cuda_visible_devices->empty());
  unsetenv("CUDA_VISIBLE_DEVICES");
}

// A set variable that is no knob but a typo away from one is named with the knob it
// likely meant; a retired knob is said to be no longer read; knobs, and other programs'
// variables far from every knob, pass silently.
void unknown_knobs_name_the_nearest(void**) {
  std::vector<std::string> w = unknown_param_warnings({"HVD_FUSED_RNG"});
  assert_int_equal(w.size(), 1);
  assert_non_null(strstr(w[0].c_str(), "HVD_FUSED_RNG"));
  assert_non_null(strstr(w[0].c_str(), "did you mean HVD_FUSED_RING?"));

  w = unknown_param_warnings({"HOROVOD_FUSION_TRESHOLD", "HVD_OP_TIMEOUT_SECOND"});
  assert_int_equal(w.size(), 2);
  assert_non_null(strstr(w[0].c_str(), "HOROVOD_FUSION_THRESHOLD"));
  assert_non_null(strstr(w[1].c_str(), "HVD_OP_TIMEOUT_SECONDS"));

  w = unknown_param_warnings({"HVD_POLL_US"});
  assert_int_equal(w.size(), 1);
  assert_non_null(strstr(w[0].c_str(), "HVD_POLL_US is no longer read"));

  std::vector<std::string> silent = {"HVD_FUSED_RING", "HOROVOD_CYCLE_TIME", "HOROVOD_RANK",
                                     "HOROVOD_CPU_OPERATIONS", "HVD_ELASTIC_DRIVER",
                                     "HVD_LIBRARY", "HVD_TEST_TIMEOUT_MULTIPLIER", "PATH",
                                     "FUSED_RNG"};
  for (const ParamInfo& info : param_registry()) silent.push_back(info.name);
  assert_int_equal(unknown_param_warnings(silent).size(), 0);
}

// The registry lists the knobs group by group, in ParamGroup's order (the reference
// prints a heading where the group changes), and every knob in the tests' group says so.
void knobs_are_grouped(void**) {
  int last = -1;
  int groups_seen = 0;
  for (const ParamInfo& info : param_registry()) {
    int group = static_cast<int>(info.group);
    assert_true(group >= last);
    if (group != last) ++groups_seen;
    last = group;
    assert_true(std::strlen(param_group_title(info.group)) > 0);
    if (info.group == ParamGroup::TestOnly)
      assert_non_null(strstr(info.description, "For tests, not users"));
  }
  assert_int_equal(groups_seen, kParamGroupCount);
}

}  // namespace

int main() {
  const CMUnitTest tests[] = {
      cmocka_unit_test(every_knob_has_default_valid_and_invalid),
      cmocka_unit_test(horovod_defaults),
      cmocka_unit_test(booleans_read_true_as_true),
      cmocka_unit_test(byte_sizes),
      cmocka_unit_test(ranges_are_enforced),
      cmocka_unit_test(pin_options_from_params),
      cmocka_unit_test(unknown_knobs_name_the_nearest),
      cmocka_unit_test(knobs_are_grouped),
  };
  return cmocka_run_group_tests_name("params", tests, nullptr, nullptr);
}
