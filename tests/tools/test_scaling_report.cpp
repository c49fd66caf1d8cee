// hvdrun --scaling without a job: the JSON reader, the step summary libhvd writes,
// and the figures of the report (efficiency, throughput, the cost model, the table
// and the --json text).
#include <cmath>
#include <string>
#include <vector>

#include "json_value.h"
#include "plot_interpreter.h"
#include "run_summary.h"
#include "scaling_report.h"

#include "cmocka_cpp.h"

using namespace hvdrun;

namespace {

// The summary as the library documents it.
const char kSummary2[] =
    R"({"ranks": 2, "steps": 40, "step_seconds": 0.0125, "step_seconds_max_rank": 0.0127,
 "exposed_wait_seconds": 0.0021, "exposed_share": 0.17, "exposed_share_max_rank": 0.2,
 "negotiate_seconds": 0.0001, "copy_seconds": 0.0002, "transfer_seconds": 0.0015,
 "bytes_per_step": 123456, "bus_bandwidth": 1.2e9, "reference_bus_bandwidth": 2.0e9,
 "top_tensors": [{"name": "layer\u00e9.grad \"w\"", "wait_seconds": 0.001}],
 "per_rank": [{"rank": 0, "steps": 40, "step_seconds": 0.0123, "exposed_wait_seconds": 0.002}],
 "a_key_added_later": {"nested": [1, [2, {"x": null}]], "flag": true}}
)";

void assert_near(double actual, double expected) {
  if (std::fabs(actual - expected) > 1e-9 * std::max(1.0, std::fabs(expected))) {
    print_error("%.12g is not %.12g\n", actual, expected);
    fail();
  }
}

RunSummary summary(int64_t ranks, double step_seconds, std::optional<double> exposed) {
  RunSummary s;
  s.ranks = ranks;
  s.steps = 10;
  s.step_seconds = step_seconds;
  s.exposed_share = exposed;
  s.text = "{\"ranks\": " + std::to_string(ranks) + "}";
  return s;
}

void json_values(void**) {
  auto v = parse_json(kSummary2);
  assert_true(v.ok());
  assert_true(v->is_object());
  assert_near(v->find("bus_bandwidth")->number(), 1.2e9);
  const JsonValue* top = v->find("top_tensors");
  assert_true(top && top->is_array());
  assert_string_equal(top->items()[0].find("name")->string().c_str(),
                      "layer\xc3\xa9.grad \"w\"");
  assert_true(v->find("a_key_added_later")->find("flag")->boolean());
  assert_null(v->find("missing"));
  assert_null(v->find("steps")->find("x"));  // not an object
  auto n = parse_json(" -0.5e-3 ");
  assert_near(n->number(), -0.5e-3);
  assert_string_equal(parse_json(R"("\ud83d\ude00\n")")->string().c_str(), "\xf0\x9f\x98\x80\n");
}

void json_errors(void**) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "expected a value at byte 0"},
      {"{\"a\": 1,}", "expected a key"},
      {"{\"a\" 1}", "expected ':'"},
      {"[1 2]", "expected ',' or ']'"},
      {"{\"a\": 1", "expected ',' or '}'"},
      {"\"abc", "unterminated string"},
      {"\"a\tb\"", "control character"},
      {"\"\\x\"", "bad escape"},
      {"\"\\u12g4\"", "bad hex digit"},
      {"01", "unexpected text after the value"},
      {"1.", "expected digits after '.'"},
      {"1e", "expected digits in the exponent"},
      {"1e999", "number out of range"},
      {"nul", "expected a value"},
      {"{} x", "unexpected text"},
  };
  for (const auto& [text, message] : cases) {
    auto r = parse_json(text);
    assert_false(r.ok());
    assert_contains(r.error(), message);
  }
  assert_contains(parse_json(std::string(100, '[') + std::string(100, ']')).error(),
                  "nesting deeper than 64 levels");
  assert_true(parse_json(std::string(60, '[') + std::string(60, ']')).ok());
}

void summary_fields(void**) {
  auto s = parse_run_summary(kSummary2, "s.json");
  assert_true(s.ok());
  assert_int_equal(s->ranks, 2);
  assert_int_equal(s->steps, 40);
  assert_near(s->step_seconds, 0.0125);
  assert_near(*s->step_seconds_max_rank, 0.0127);
  assert_near(*s->exposed_share, 0.17);
  assert_near(*s->exposed_wait_seconds, 0.0021);
  assert_near(*s->bus_bandwidth, 1.2e9);
  assert_string_equal(s->text.c_str(), kSummary2);
  // Only ranks, steps and step_seconds are required.
  s = parse_run_summary(R"({"ranks": 1, "steps": 3, "step_seconds": 0.5, "exposed_share": null})",
                        "s.json");
  assert_true(s.ok());
  assert_false(s->exposed_share.has_value());
}

void summary_errors(void**) {
  const std::pair<const char*, const char*> cases[] = {
      {"[1]", "s.json: not a JSON object"},
      {"{\"ranks\": 1, \"steps\": 2", "s.json: JSON: expected ',' or '}'"},
      {R"({"steps": 2, "step_seconds": 1})", "\"ranks\" is missing"},
      {R"({"ranks": 2, "step_seconds": 1})", "\"steps\" is missing"},
      {R"({"ranks": 2, "steps": 2})", "\"step_seconds\" is missing"},
      {R"({"ranks": "2", "steps": 2, "step_seconds": 1})", "\"ranks\" is not a number"},
      {R"({"ranks": 0, "steps": 2, "step_seconds": 1})", "\"ranks\" is not a positive whole"},
      {R"({"ranks": 1.5, "steps": 2, "step_seconds": 1})", "\"ranks\" is not a positive whole"},
      {R"({"ranks": 1, "steps": -2, "step_seconds": 1})", "\"steps\" is not a whole number"},
      {R"({"ranks": 1, "steps": 2, "step_seconds": -1})", "\"step_seconds\" is negative"},
      {R"({"ranks": 1, "steps": 2, "step_seconds": 1, "exposed_share": "x"})",
       "\"exposed_share\" is not a number"},
  };
  for (const auto& [text, message] : cases) {
    auto r = parse_run_summary(text, "s.json");
    assert_false(r.ok());
    assert_contains(r.error(), message);
  }
  assert_contains(read_run_summary("/nonexistent/summary.json").error(),
                  "no step summary in /nonexistent/summary.json");
}

void efficiency_and_throughput(void**) {
  // Weak scaling: 10 ms on 1 rank, 12.5 ms on 2, 20 ms on 4.
  auto report = make_scaling_report({summary(1, 0.010, 0.0), summary(2, 0.0125, 0.17),
                                     summary(4, 0.020, std::nullopt)},
                                    {});
  assert_int_equal(report.rows.size(), 3);
  assert_near(report.rows[0].efficiency, 1.0);
  assert_near(report.rows[1].efficiency, 0.8);
  assert_near(report.rows[2].efficiency, 0.5);
  assert_near(report.rows[0].throughput, 100);  // rank-steps per second
  assert_near(report.rows[1].throughput, 160);
  assert_near(report.rows[2].throughput, 200);
  assert_false(report.rows[1].cost.has_value());
  // Throughput in samples: each rank takes 32 samples a step.
  CostInputs in;
  in.samples_per_step = 32;
  report = make_scaling_report({summary(1, 0.010, 0.0), summary(2, 0.0125, 0.17)}, in);
  assert_near(report.rows[1].throughput, 32 * 160);
  // The smallest size need not be 1.
  report = make_scaling_report({summary(2, 0.010, 0.0), summary(8, 0.0125, 0.1)}, {});
  assert_near(report.rows[1].efficiency, 0.8);
}

void cost_model(void**) {
  // DESIGN.md's example: at 90% efficiency 8 workers turn a 24 h job into 3.3 h for 11%
  // more money.
  CostInputs in;
  in.price_per_hour = 3;
  in.hours = 24;
  auto report = make_scaling_report({summary(1, 0.009, 0.0), summary(8, 0.010, 0.1)}, in);
  const ScalingRow& one = report.rows[0];
  const ScalingRow& eight = report.rows[1];
  assert_near(eight.efficiency, 0.9);
  assert_near(*one.hours, 24);
  assert_near(*one.cost, 72);
  assert_near(*eight.hours, 24.0 / (8 * 0.9));
  assert_near(*eight.cost, 80);
  assert_near(*eight.cost / *one.cost, 1.0 / 0.9);  // +11%
  assert_false(eight.total.has_value());
  assert_false(eight.break_even_efficiency.has_value());

  // An hour of waiting is worth 10: waiting 24 h on 1 rank costs 72 + 240 = 312.
  in.time_value = 10;
  report = make_scaling_report({summary(1, 0.009, 0.0), summary(8, 0.010, 0.1)}, in);
  assert_near(*report.rows[0].total, 312);
  assert_near(*report.rows[1].total, 80 + 10 * 24.0 / (8 * 0.9));
  // Break-even: 24/(8 S) * (8*3 + 10) = 312  ->  S = 34 / 104.
  double s = *report.rows[1].break_even_efficiency;
  assert_near(s, 34.0 / 104.0);
  assert_near(24.0 / (8 * s) * (8 * 3 + 10), 312);
  assert_near(*report.rows[0].break_even_efficiency, 1.0);

  // From a base of 2 ranks: T is the hours on 2, and the break-even compares with 2.
  report = make_scaling_report({summary(2, 0.010, 0.0), summary(4, 0.0125, 0.1)}, in);
  assert_near(*report.rows[1].hours, 24 * 2 / (4 * 0.8));
  double s4 = *report.rows[1].break_even_efficiency;
  assert_near(24 * 2 / (4 * s4) * (4 * 3 + 10), 24 * (2 * 3 + 10));
}

void table_text(void**) {
  auto report = make_scaling_report({summary(1, 0.010, 0.0), summary(2, 0.0125, 0.17)}, {});
  std::string t = format_scaling_table(report);
  assert_contains(t, "ranks  step time  rank-steps/s  efficiency  exposed comm\n");
  assert_contains(t, "    1   10.00 ms         100.0      100.0%          0.0%\n");
  assert_contains(t, "    2   12.50 ms         160.0       80.0%         17.0%\n");
  assert_contains(t, "efficiency: step time on 1 rank / step time");
  assert_true(t.find("cost") == std::string::npos);

  CostInputs in;
  in.samples_per_step = 32;
  in.price_per_hour = 3;
  in.hours = 24;
  in.time_value = 10;
  report = make_scaling_report({summary(1, 0.009, std::nullopt), summary(8, 0.010, 0.1)}, in);
  t = format_scaling_table(report);
  assert_contains(t, "samples/s");
  assert_contains(t, "time (h)");
  assert_contains(t, "break-even");
  assert_contains(t, "   9.00 ms");
  assert_contains(t, "-");       // no exposed share for the first run
  assert_contains(t, "24.00");   // hours on 1 rank
  assert_contains(t, "3.33");    // hours on 8
  assert_contains(t, "80.00");   // cost on 8
  assert_contains(t, "312.00");  // total on 1
  assert_contains(t, "32.7%");   // break-even on 8
  assert_contains(t, "a job of 24 h on 1 rank at 3 per rank-hour; total adds 10 per hour");
}

void json_text(void**) {
  CostInputs in;
  in.price_per_hour = 3;
  in.hours = 24;
  auto first = parse_run_summary(
      R"({"ranks": 1, "steps": 10, "step_seconds": 0.009, "exposed_share": 0})", "a");
  auto second = parse_run_summary(kSummary2, "b");
  auto report = make_scaling_report({*first, *second}, in);
  std::string text = scaling_report_json(report);
  auto v = parse_json(text);
  if (!v.ok()) print_error("%s\n%s\n", v.error().c_str(), text.c_str());
  assert_true(v.ok());
  assert_near(v->find("price_per_hour")->number(), 3);
  assert_int_equal(v->find("time_value")->type(), JsonValue::Type::Null);
  assert_string_equal(v->find("throughput_unit")->string().c_str(), "rank-steps/s");
  const auto& runs = v->find("runs")->items();
  assert_int_equal(runs.size(), 2);
  assert_near(runs[1].find("ranks")->number(), 2);
  assert_near(runs[1].find("efficiency")->number(), 0.009 / 0.0125);
  assert_near(runs[1].find("cost")->number(), *report.rows[1].cost);
  assert_int_equal(runs[1].find("total")->type(), JsonValue::Type::Null);
  // Each run's own summary comes along whole, keys added later included.
  const JsonValue* s = runs[1].find("summary");
  assert_near(s->find("reference_bus_bandwidth")->number(), 2.0e9);
  assert_true(s->find("a_key_added_later")->find("flag")->boolean());
}

// --plot's Python: HVDRUN_PYTHON, else the job's interpreter, else python3 from PATH.
void plot_interpreter_chosen(void**) {
  for (const char* p : {"python", "python3", "python3.11", "/usr/bin/python3",
                        "/root/.pyenv/versions/3.11.4/bin/python3.11", "pypy3", "./python"})
    assert_true(is_python_interpreter(p));
  for (const char* p : {"train.py", "./train_linear", "python-config", "pythonic", "/usr/bin/env",
                        "ipython3", "python3-dbg", ""})
    assert_false(is_python_interpreter(p));
  PlotInterpreter p = choose_plot_interpreter({"/usr/bin/python3", "train.py"}, nullptr);
  assert_string_equal(p.program.c_str(), "/usr/bin/python3");
  assert_string_equal(p.origin.c_str(), "the job's interpreter");
  p = choose_plot_interpreter({"/usr/bin/python3", "train.py"}, "/opt/py/bin/python");
  assert_string_equal(p.program.c_str(), "/opt/py/bin/python");
  assert_string_equal(p.origin.c_str(), "HVDRUN_PYTHON");
  p = choose_plot_interpreter({"/usr/bin/python3", "train.py"}, "");
  assert_string_equal(p.program.c_str(), "/usr/bin/python3");
  p = choose_plot_interpreter({"./train_linear"}, nullptr);
  assert_string_equal(p.program.c_str(), "python3");
  assert_string_equal(p.origin.c_str(), "python3 from PATH");
}

}  // namespace

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(json_values),        cmocka_unit_test(json_errors),
      cmocka_unit_test(summary_fields),     cmocka_unit_test(summary_errors),
      cmocka_unit_test(efficiency_and_throughput), cmocka_unit_test(cost_model),
      cmocka_unit_test(table_text),         cmocka_unit_test(json_text),
      cmocka_unit_test(plot_interpreter_chosen),
  };
  return cmocka_run_group_tests(tests, nullptr, nullptr);
}
