#include "scaling_report.h"

#include <algorithm>
#include <cstdio>

namespace hvdrun {
namespace {

std::string printf_text(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

std::string duration_text(double seconds) {
  if (seconds < 1e-3) return printf_text("%.1f us", seconds * 1e6);
  if (seconds < 1) return printf_text("%.2f ms", seconds * 1e3);
  return printf_text("%.3f s", seconds);
}

std::string percent_text(std::optional<double> share) {
  return share ? printf_text("%.1f%%", *share * 100) : "-";
}

std::string money_text(std::optional<double> value) {
  return value ? printf_text("%.2f", *value) : "-";
}

// Columns of right-aligned cells under their headers.
struct Column {
  std::string header;
  std::vector<std::string> cells;
};

std::string layout(const std::vector<Column>& columns) {
  std::vector<size_t> widths;
  size_t rows = 0;
  for (const auto& c : columns) {
    size_t w = c.header.size();
    for (const auto& cell : c.cells) w = std::max(w, cell.size());
    widths.push_back(w);
    rows = std::max(rows, c.cells.size());
  }
  auto line = [&](auto cell_of) {
    std::string out;
    for (size_t i = 0; i < columns.size(); ++i) {
      std::string cell = cell_of(columns[i]);
      out += (i ? "  " : "") + std::string(widths[i] - cell.size(), ' ') + cell;
    }
    return out + "\n";
  };
  std::string out = line([](const Column& c) { return c.header; });
  for (size_t r = 0; r < rows; ++r)
    out += line([r](const Column& c) { return r < c.cells.size() ? c.cells[r] : ""; });
  return out;
}

// JSON numbers: enough digits to round-trip; null for what was not computed.
std::string json_number(std::optional<double> value) {
  return value ? printf_text("%.10g", *value) : "null";
}

}  // namespace

ScalingReport make_scaling_report(std::vector<RunSummary> runs, const CostInputs& inputs) {
  ScalingReport report;
  report.inputs = inputs;
  if (runs.empty()) return report;
  const double n0 = static_cast<double>(runs.front().ranks);
  const double base_step = runs.front().step_seconds;
  const bool costed = inputs.price_per_hour && inputs.hours;
  for (const auto& run : runs) {
    ScalingRow row;
    const double n = static_cast<double>(run.ranks);
    row.ranks = run.ranks;
    row.step_seconds = run.step_seconds;
    row.throughput = n * inputs.samples_per_step.value_or(1) / run.step_seconds;
    row.efficiency = base_step / run.step_seconds;
    row.exposed_share = run.exposed_share;
    if (costed) {
      const double p = *inputs.price_per_hour;
      row.hours = *inputs.hours * n0 / (n * row.efficiency);
      row.cost = *row.hours * n * p;
      if (inputs.time_value) {
        const double w = *inputs.time_value;
        row.total = *row.cost + *row.hours * w;
        row.break_even_efficiency = n0 * (n * p + w) / (n * (n0 * p + w));
      }
    }
    report.rows.push_back(row);
  }
  report.summaries = std::move(runs);
  return report;
}

std::string format_scaling_table(const ScalingReport& report) {
  const CostInputs& in = report.inputs;
  std::vector<Column> cols = {{"ranks", {}},
                              {"step time", {}},
                              {in.samples_per_step ? "samples/s" : "rank-steps/s", {}},
                              {"efficiency", {}},
                              {"exposed comm", {}}};
  const bool costed = !report.rows.empty() && report.rows.front().hours;
  const bool totalled = costed && report.rows.front().total;
  if (costed) {
    cols.push_back({"time (h)", {}});
    cols.push_back({"cost", {}});
  }
  if (totalled) {
    cols.push_back({"total", {}});
    cols.push_back({"break-even", {}});
  }
  for (size_t i = 0; i < report.rows.size(); ++i) {
    const ScalingRow& r = report.rows[i];
    cols[0].cells.push_back(std::to_string(r.ranks));
    cols[1].cells.push_back(duration_text(r.step_seconds));
    cols[2].cells.push_back(printf_text("%.1f", r.throughput));
    cols[3].cells.push_back(percent_text(r.efficiency));
    cols[4].cells.push_back(percent_text(r.exposed_share));
    if (costed) {
      cols[5].cells.push_back(printf_text("%.2f", *r.hours));
      cols[6].cells.push_back(money_text(r.cost));
    }
    if (totalled) {
      cols[7].cells.push_back(money_text(r.total));
      cols[8].cells.push_back(i == 0 ? "-" : percent_text(r.break_even_efficiency));
    }
  }
  std::string out = layout(cols);
  if (report.rows.empty()) return out;
  const std::string n0 = std::to_string(report.rows.front().ranks);
  out += "efficiency: step time on " + n0 + " rank" + (n0 == "1" ? "" : "s") +
         " / step time (weak scaling); exposed comm: share of the step spent waiting "
         "for communication\n";
  if (costed) {
    out += "time and cost: a job of " + printf_text("%g", *in.hours) + " h on " + n0 +
           (n0 == "1" ? " rank" : " ranks") + " at " + printf_text("%g", *in.price_per_hour) +
           " per rank-hour";
    if (totalled)
      out += "; total adds " + printf_text("%g", *in.time_value) +
             " per hour of waiting; break-even: the efficiency at which that size costs, in "
             "total, what " + n0 + " cost" + (n0 == "1" ? "s" : "");
    out += "\n";
  }
  return out;
}

std::string scaling_report_json(const ScalingReport& report) {
  const CostInputs& in = report.inputs;
  std::string out = "{\"samples_per_step\": " + json_number(in.samples_per_step) +
                    ", \"price_per_hour\": " + json_number(in.price_per_hour) +
                    ", \"hours\": " + json_number(in.hours) +
                    ", \"time_value\": " + json_number(in.time_value) +
                    ", \"throughput_unit\": \"" +
                    (in.samples_per_step ? "samples/s" : "rank-steps/s") + "\", \"runs\": [";
  for (size_t i = 0; i < report.rows.size(); ++i) {
    const ScalingRow& r = report.rows[i];
    out += std::string(i ? ",\n  " : "\n  ") + "{\"ranks\": " + std::to_string(r.ranks) +
           ", \"step_seconds\": " + json_number(r.step_seconds) +
           ", \"throughput\": " + json_number(r.throughput) +
           ", \"efficiency\": " + json_number(r.efficiency) +
           ", \"exposed_share\": " + json_number(r.exposed_share) +
           ", \"hours\": " + json_number(r.hours) + ", \"cost\": " + json_number(r.cost) +
           ", \"total\": " + json_number(r.total) +
           ", \"break_even_efficiency\": " + json_number(r.break_even_efficiency);
    if (i < report.summaries.size()) {
      std::string text = report.summaries[i].text;
      while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
      out += ", \"summary\": " + text;
    }
    out += "}";
  }
  return out + "]}\n";
}

}  // namespace hvdrun
