#include "timeline/trace_format.h"

#include <charconv>
#include <initializer_list>
#include <cstdio>

#include "base/utf8.h"

namespace hvd {

namespace {

// std::to_chars, not snprintf: the writer formats every event, and printf's format
// parsing was most of its time.
void append_int(std::string* out, int64_t v) {
  char buf[24];
  auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
  out->append(buf, static_cast<size_t>(end - buf));
}

// Microseconds with three decimals, from nanoseconds.
void append_ts(std::string* out, int64_t ts_ns) {
  if (ts_ns < 0) ts_ns = 0;
  append_int(out, ts_ns / 1000);
  char frac[4] = {'.', static_cast<char>('0' + ts_ns % 1000 / 100),
                  static_cast<char>('0' + ts_ns % 100 / 10), static_cast<char>('0' + ts_ns % 10)};
  out->append(frac, 4);
}

}  // namespace

void append_json_string(std::string* out, std::string_view s) {
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(static_cast<char>(c));
      ++i;
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out->append(buf);
      ++i;
    } else if (c < 0x80) {
      out->push_back(static_cast<char>(c));
      ++i;
    } else if (size_t n = utf8_sequence_length(s, i)) {
      out->append(s.substr(i, n));
      i += n;
    } else {
      out->append("\\ufffd");
      ++i;
    }
  }
  out->push_back('"');
}

// A counter track ("ph":"C"): one series per name, from e.value in order.
static void append_counter(std::string* out, std::string_view label, const TraceEvent& e,
                           std::initializer_list<const char*> series) {
  out->append(R"({"name":)");
  append_json_string(out, label);
  out->append(R"(,"ph":"C","ts":)");
  append_ts(out, e.ts_ns);
  out->append(R"(,"pid":0,"args":{)");
  size_t i = 0;
  for (const char* name : series) {
    out->append(i ? ",\"" : "\"").append(name).append("\":");
    append_int(out, e.value[i++]);
  }
  out->append("}}");
}

std::string_view TraceFormatter::text(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= strings_.size()) return "?";
  return strings_[static_cast<size_t>(id)];
}

void TraceFormatter::separator(std::string* out) {
  if (!first_) out->append(",\n");
  first_ = false;
}

void TraceFormatter::append(const TraceBatch& batch, std::string* out) {
  // Ids are dense and arrive in order; a gap would mean a lost batch, so pad rather
  // than mislabel.
  if (!batch.new_strings.empty()) {
    strings_.resize(static_cast<size_t>(batch.first_new_id), "?");
    strings_.insert(strings_.end(), batch.new_strings.begin(), batch.new_strings.end());
  }
  for (const TraceEvent& e : batch.events) {
    separator(out);
    switch (e.kind) {
      case TraceKind::ProcessName:
        out->append(R"({"name":"process_name","ph":"M","pid":)");
        append_int(out, e.pid);
        out->append(R"(,"args":{"name":)");
        append_json_string(out, text(e.label));
        out->append("}},\n");
        out->append(R"({"name":"process_sort_index","ph":"M","pid":)");
        append_int(out, e.pid);
        out->append(R"(,"args":{"sort_index":)");
        append_int(out, e.pid);
        out->append("}}");
        break;
      case TraceKind::Begin:
        out->append(R"({"name":)");
        append_json_string(out, text(e.label));
        out->append(R"(,"ph":"B","ts":)");
        append_ts(out, e.ts_ns);
        out->append(R"(,"pid":)");
        append_int(out, e.pid);
        out->append(R"(,"tid":0)");
        if (e.value[0] >= 0) {
          out->append(R"(,"args":{"bytes":)");
          append_int(out, e.value[0]);
          out->append("}");
        }
        out->append("}");
        break;
      case TraceKind::End:
        out->append(R"({"ph":"E","ts":)");
        append_ts(out, e.ts_ns);
        out->append(R"(,"pid":)");
        append_int(out, e.pid);
        out->append(R"(,"tid":0)");
        if (e.label >= 0 || e.value[0] > 0 || e.value[1] > 0) {
          const char* sep = R"(,"args":{)";
          auto arg = [&](const char* key, int32_t id) {
            out->append(sep);
            append_json_string(out, key);
            out->push_back(':');
            append_json_string(out, text(id));
            sep = ",";
          };
          if (e.label >= 0) arg("status", e.label);
          if (e.value[0] > 0) arg("dtype", static_cast<int32_t>(e.value[0] - 1));
          if (e.value[1] > 0) arg("shape", static_cast<int32_t>(e.value[1] - 1));
          out->append("}");
        }
        out->append("}");
        break;
      case TraceKind::RankReady:
        // Named by the rank, as Horovod does, so the row reads "0 1 3 2" in order.
        out->append(R"({"name":")");
        append_int(out, e.value[0]);
        out->append(R"(","ph":"i","s":"t","ts":)");
        append_ts(out, e.ts_ns);
        out->append(R"(,"pid":)");
        append_int(out, e.pid);
        out->append(R"(,"tid":0,"args":{"rank":)");
        append_int(out, e.value[0]);
        out->append("}}");
        break;
      case TraceKind::CycleStart:
        out->append(R"({"name":"CYCLE_START","ph":"i","s":"g","ts":)");
        append_ts(out, e.ts_ns);
        out->append(R"(,"pid":0,"tid":0})");
        break;
      case TraceKind::Counter:
        append_counter(out, text(e.label), e, {"local", "cross", "global"});
        break;
      case TraceKind::StepCounter:
        append_counter(out, text(e.label), e, {"exposed_wait_us", "rest_of_step_us"});
        break;
      case TraceKind::Dropped:
        out->append(R"({"name":"TIMELINE_EVENTS_DROPPED","ph":"i","s":"g","ts":)");
        append_ts(out, e.ts_ns);
        out->append(R"(,"pid":0,"tid":0,"args":{"count":)");
        append_int(out, e.value[0]);
        out->append("}}");
        break;
    }
  }
}

}  // namespace hvd
