#include "run_summary.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "json_value.h"

namespace hvdrun {
namespace {

using R = Result<RunSummary>;

// A finite number at key, or nullopt when the key is absent or null.
Result<std::optional<double>> number_at(const JsonValue& object, const char* key,
                                        const std::string& source) {
  using N = Result<std::optional<double>>;
  const JsonValue* v = object.find(key);
  if (!v || v->type() == JsonValue::Type::Null) return std::optional<double>();
  if (!v->is_number() || !std::isfinite(v->number()))
    return N::failure(source + ": \"" + key + "\" is not a number");
  return std::optional<double>(v->number());
}

}  // namespace

Result<RunSummary> parse_run_summary(std::string_view text, const std::string& source) {
  auto json = parse_json(text);
  if (!json) return R::failure(source + ": " + json.error());
  if (!json->is_object()) return R::failure(source + ": not a JSON object");

  RunSummary s;
  s.text = std::string(text);
  auto get = [&](const char* key, std::optional<double>& field) -> Status {
    auto v = number_at(*json, key, source);
    if (!v) return Status::failure(v.error());
    field = *v;
    return success();
  };
  std::optional<double> ranks, steps, step_seconds;
  for (auto [key, field] : {std::pair{"ranks", &ranks}, {"steps", &steps},
                            {"step_seconds", &step_seconds}}) {
    if (Status st = get(key, *field); !st) return R::failure(st.error());
    if (!*field) return R::failure(source + ": \"" + key + "\" is missing");
  }
  if (*ranks < 1 || *ranks != std::floor(*ranks))
    return R::failure(source + ": \"ranks\" is not a positive whole number");
  if (*steps < 0 || *steps != std::floor(*steps))
    return R::failure(source + ": \"steps\" is not a whole number");
  if (*step_seconds < 0) return R::failure(source + ": \"step_seconds\" is negative");
  s.ranks = static_cast<int64_t>(*ranks);
  s.steps = static_cast<int64_t>(*steps);
  s.step_seconds = *step_seconds;
  for (auto [key, field] : {std::pair{"step_seconds_max_rank", &s.step_seconds_max_rank},
                            {"exposed_share", &s.exposed_share},
                            {"exposed_wait_seconds", &s.exposed_wait_seconds},
                            {"bus_bandwidth", &s.bus_bandwidth}}) {
    if (Status st = get(key, *field); !st) return R::failure(st.error());
  }
  return s;
}

Result<RunSummary> read_run_summary(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  if (in) text << in.rdbuf();
  if (!in || text.str().empty())
    return R::failure("no step summary in " + path);
  return parse_run_summary(text.str(), path);
}

}  // namespace hvdrun
