#include "observe/step_summary.h"

#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "base/atomic_file.h"
#include "base/log.h"
#include "queue/request.h"
#include "observe/step_stats.h"

namespace hvd {

namespace {

constexpr int kTopTensors = 8;
constexpr size_t kNameBytes = 120;
// The reference probe reduces at most this much per call: large enough that MPI is
// at its bus bandwidth, small enough that a slow network probes in well under a second.
constexpr int64_t kProbeMaxBytes = 16ll << 20;
constexpr double kProbeBudgetS = 0.25;
constexpr int kProbeMaxCalls = 5;

// What each rank sends to rank 0: plain bytes, the same layout on every rank (one
// library build per job).
struct RankRecord {
  int64_t steps, steps_seen;
  double step_s, wait_s, negotiate_s, copy_s, transfer_s, peer_wait_s, bytes, bus_bandwidth,
      reference_bandwidth;
  struct {
    char name[kNameBytes];
    double wait_s;  // per step
  } top[kTopTensors];
};

// MPI_Test until done or the deadline; nap_us 0 polls without sleeping (the probe).
bool wait_until(MPI_Request* request, double deadline, int64_t nap_us) {
  while (true) {
    int flag = 0;
    if (MPI_Test(request, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
    if (flag) return true;
    if (now_seconds() > deadline) return false;
    if (nap_us > 0) {
      timespec ts{0, static_cast<long>(nap_us * 1000)};
      nanosleep(&ts, nullptr);
    }
  }
}

// Raw MPI's allreduce bus bandwidth for `bytes` (equal on every rank), bytes/s.
// Collective; *ok false when a rank did not answer in time.
double probe_reference(MPI_Comm comm, int size, int64_t bytes, double deadline, bool* ok) {
  *ok = true;
  const int count = static_cast<int>(std::max<int64_t>(1, bytes / 4));
  std::vector<float> buffer(static_cast<size_t>(count), 1.0f);
  auto allreduce = [&](double* seconds) {
    MPI_Request request;
    const double start = now_seconds();
    if (MPI_Iallreduce(MPI_IN_PLACE, buffer.data(), count, MPI_FLOAT, MPI_SUM, comm, &request) !=
            MPI_SUCCESS ||
        !wait_until(&request, deadline, 0))
      return false;
    *seconds = now_seconds() - start;
    return true;
  };
  // The first call pays for connections and buffers; its time (the slowest rank's)
  // says how many more fit the budget, the same number on every rank.
  double first = 0, slowest = 0;
  if (!allreduce(&first)) return *ok = false, 0.0;
  MPI_Request request;
  if (MPI_Iallreduce(&first, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm, &request) != MPI_SUCCESS ||
      !wait_until(&request, deadline, 50))
    return *ok = false, 0.0;
  const int calls =
      slowest > 0 ? std::clamp(static_cast<int>(kProbeBudgetS / slowest), 0, kProbeMaxCalls) : 1;
  double total = 0;
  for (int i = 0; i < calls; ++i) {
    double t = 0;
    if (!allreduce(&t)) return *ok = false, 0.0;
    total += t;
  }
  const double per_call = calls > 0 ? total / calls : first;
  const double bus = static_cast<double>(count) * 4.0 * 2.0 * (size - 1) / size;
  return per_call > 0 ? bus / per_call : 0.0;
}

void append_json_string(std::string* out, std::string_view s) {
  out->push_back('"');
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out->append(buf);
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

double share(double part, double whole) { return whole > 0 ? part / whole : 0.0; }

struct Aggregate {
  double step_mean = 0, step_max = 0, wait_mean = 0, share_mean = 0, share_max = 0;
  int share_max_rank = 0;
  double negotiate = 0, copy = 0, transfer = 0, peer_wait = 0, bus = 0, reference = 0;
  // The rank the others waited for: the one that waited least itself (it arrived last
  // most often); -1 where nobody waited, or every rank about as long.
  int waited_for_rank = -1;
};

Aggregate aggregate(const std::vector<RankSummary>& ranks) {
  Aggregate a;
  if (ranks.empty()) return a;
  const double n = static_cast<double>(ranks.size());
  a.reference = ranks.front().reference_bandwidth;
  for (const RankSummary& r : ranks) {
    a.step_mean += r.step_s / n;
    a.step_max = std::max(a.step_max, r.step_s);
    a.wait_mean += r.wait_s / n;
    const double s = share(r.wait_s, r.step_s);
    a.share_mean += s / n;
    if (&r == &ranks.front() || s > a.share_max) {
      a.share_max = s;
      a.share_max_rank = r.rank;
    }
    a.negotiate += r.negotiate_s / n;
    a.copy += r.copy_s / n;
    a.transfer += r.transfer_s / n;
    a.peer_wait += r.peer_wait_s / n;
    a.bus += r.bus_bandwidth / n;
    // The collective ends when its slowest rank does: the reference is the lowest.
    a.reference = std::min(a.reference, r.reference_bandwidth);
  }
  if (ranks.size() > 1 && a.peer_wait > 0) {
    const auto least = std::min_element(
        ranks.begin(), ranks.end(),
        [](const RankSummary& x, const RankSummary& y) { return x.peer_wait_s < y.peer_wait_s; });
    // Ranks that each wait about as long wait for one another (all descheduled in turn):
    // one rank is named only where it waited under half the mean.
    if (least->peer_wait_s < a.peer_wait / 2) a.waited_for_rank = least->rank;
  }
  return a;
}

std::string ms(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  return buf;
}

std::string gbps(double bytes_per_s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f GB/s", bytes_per_s * 1e-9);
  return buf;
}

}  // namespace

bool step_summary_requested(const Params& params) {
  return params.step_stats && (params.summary || !params.summary_file.empty());
}

std::string summary_json(const std::vector<RankSummary>& ranks,
                         const std::vector<SummaryTensor>& top, int64_t warmup,
                         int64_t reference_bytes) {
  const Aggregate a = aggregate(ranks);
  const RankSummary first = ranks.empty() ? RankSummary{} : ranks.front();
  std::string out = "{";
  out += "\"ranks\": " + std::to_string(ranks.size());
  out += ", \"steps\": " + std::to_string(first.steps);
  out += ", \"warmup_steps\": " + std::to_string(warmup);
  out += ", \"step_seconds\": " + num(a.step_mean);
  out += ", \"step_seconds_max_rank\": " + num(a.step_max);
  out += ", \"exposed_wait_seconds\": " + num(a.wait_mean);
  out += ", \"exposed_share\": " + num(a.share_mean);
  out += ", \"exposed_share_max_rank\": " + num(a.share_max);
  out += ", \"exposed_share_worst_rank\": " + std::to_string(a.share_max_rank);
  out += ", \"negotiate_seconds\": " + num(a.negotiate);
  out += ", \"copy_seconds\": " + num(a.copy);
  out += ", \"transfer_seconds\": " + num(a.transfer);
  out += ", \"peer_wait_seconds\": " + num(a.peer_wait);
  out += ", \"waited_for_rank\": " + std::to_string(a.waited_for_rank);
  out += ", \"bytes_per_step\": " + std::to_string(static_cast<int64_t>(first.bytes + 0.5));
  out += ", \"bus_bandwidth\": " + num(a.bus);
  out += ", \"reference_bus_bandwidth\": " + num(a.reference);
  out += ", \"reference_bytes\": " + std::to_string(reference_bytes);
  out += ", \"top_tensors\": [";
  for (size_t i = 0; i < top.size(); ++i) {
    if (i) out += ", ";
    out += "{\"name\": ";
    append_json_string(&out, top[i].name);
    out += ", \"wait_seconds\": " + num(top[i].wait_s) + "}";
  }
  out += "], \"per_rank\": [";
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankSummary& r = ranks[i];
    if (i) out += ", ";
    out += "{\"rank\": " + std::to_string(r.rank) + ", \"steps\": " + std::to_string(r.steps) +
           ", \"step_seconds\": " + num(r.step_s) + ", \"exposed_wait_seconds\": " +
           num(r.wait_s) + ", \"exposed_share\": " + num(share(r.wait_s, r.step_s)) +
           ", \"negotiate_seconds\": " + num(r.negotiate_s) + ", \"copy_seconds\": " +
           num(r.copy_s) + ", \"transfer_seconds\": " + num(r.transfer_s) +
           ", \"peer_wait_seconds\": " + num(r.peer_wait_s) +
           ", \"steps_seen\": " + std::to_string(r.steps_seen) +
           ", \"bytes_per_step\": " + std::to_string(static_cast<int64_t>(r.bytes + 0.5)) +
           ", \"bus_bandwidth\": " + num(r.bus_bandwidth) + ", \"reference_bus_bandwidth\": " +
           num(r.reference_bandwidth) + "}";
  }
  out += "]}\n";
  return out;
}

std::string summary_table(const std::vector<RankSummary>& ranks,
                          const std::vector<SummaryTensor>& top, int64_t warmup,
                          int64_t reference_bytes) {
  const Aggregate a = aggregate(ranks);
  const RankSummary first = ranks.empty() ? RankSummary{} : ranks.front();
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line,
                "libhvd step summary: %zu ranks, %lld steps measured on every rank (the first "
                "%lld left out as warm-up)\n",
                ranks.size(), static_cast<long long>(first.steps), static_cast<long long>(warmup));
  out += line;
  if (first.steps == 0) {
    out += "  no step was measured: steps end when a tensor name comes back, or at each "
           "hvd_mark_step()\n";
    return out;
  }
  std::snprintf(line, sizeof line, "  %-26s %s mean over ranks, %s on the slowest rank\n",
                "step time", ms(a.step_mean).c_str(), ms(a.step_max).c_str());
  out += line;
  std::snprintf(line, sizeof line,
                "  %-26s %s per step: %.1f%% of the step (mean over ranks), %.1f%% on rank %d "
                "(the worst)\n",
                "exposed communication", ms(a.wait_mean).c_str(), a.share_mean * 100,
                a.share_max * 100, a.share_max_rank);
  out += line;
  std::snprintf(line, sizeof line, "  %-26s %s per step\n", "negotiation",
                ms(a.negotiate).c_str());
  out += line;
  std::snprintf(line, sizeof line, "  %-26s %s per step\n", "fusion copies and scaling",
                ms(a.copy).c_str());
  out += line;
  if (a.peer_wait > 0) {
    char what[40];
    if (a.waited_for_rank >= 0)
      std::snprintf(what, sizeof what, "waiting for rank %d", a.waited_for_rank);
    else
      std::snprintf(what, sizeof what, "waiting for other ranks");
    std::snprintf(line, sizeof line,
                  "  %-26s %s per step (mean over ranks): from entering a transfer until its "
                  "last rank did\n",
                  what, ms(a.peer_wait).c_str());
    out += line;
  }
  std::snprintf(line, sizeof line, "  %-26s %s per step, %.0f bytes per step\n", "transfers",
                ms(a.transfer).c_str(), first.bytes);
  out += line;
  if (a.reference > 0)
    std::snprintf(line, sizeof line,
                  "  %-26s %s achieved, raw MPI_Allreduce of %lld bytes reaches %s (%.0f%%)\n",
                  "bus bandwidth", gbps(a.bus).c_str(), static_cast<long long>(reference_bytes),
                  gbps(a.reference).c_str(), share(a.bus, a.reference) * 100);
  else
    std::snprintf(line, sizeof line, "  %-26s %s achieved (no raw-MPI reference measured)\n",
                  "bus bandwidth", gbps(a.bus).c_str());
  out += line;
  if (!top.empty()) {
    out += "  waited on longest (per step, mean over ranks):\n";
    for (const SummaryTensor& t : top) {
      std::snprintf(line, sizeof line, "    %-48.48s %s\n", t.name.c_str(), ms(t.wait_s).c_str());
      out += line;
    }
  }
  if (ranks.size() > 1 && ranks.size() <= 64) {
    std::snprintf(line, sizeof line, "  %6s %8s %12s %12s %8s %14s\n", "rank", "steps",
                  "step ms", "exposed ms", "share", "peer wait ms");
    out += line;
    for (const RankSummary& r : ranks) {
      std::snprintf(line, sizeof line, "  %6d %8lld %12.3f %12.3f %7.1f%% %14.3f\n", r.rank,
                    static_cast<long long>(r.steps), r.step_s * 1e3, r.wait_s * 1e3,
                    share(r.wait_s, r.step_s) * 100, r.peer_wait_s * 1e3);
      out += line;
    }
    for (const RankSummary& r : ranks)
      if (r.steps_seen != r.steps) {
        std::snprintf(line, sizeof line,
                      "  steps are counted over the %lld every rank measured (rank %d measured "
                      "%lld: its last ones are left out)\n",
                      static_cast<long long>(r.steps), r.rank,
                      static_cast<long long>(r.steps_seen));
        out += line;
      }
  }
  return out;
}

void step_summary_at_shutdown(MPI_Comm comm, int rank, int size, const Params& params,
                              double timeout_s) {
  if (!step_summary_requested(params)) {
    if ((params.summary || !params.summary_file.empty()) && rank == 0)
      HVD_LOG(Warning, "HVD_SUMMARY/HVD_SUMMARY_FILE: no summary, step accounting is off "
                       "(HVD_STEP_STATS=0)");
    return;
  }
  const double deadline = now_seconds() + timeout_s;
  const StepStats& stats = step_stats();
  // The same steps on every rank: a step boundary is each rank's own (a mark by its
  // training loop, or a name's return seen by its background thread), so at shutdown
  // one rank may have ended a step that another has not. Every rank reports the count
  // they all measured, leaving out its own last extra steps.
  const int64_t seen = stats.totals().steps;
  int64_t minus_seen = -seen, minus_agreed = 0;
  MPI_Request request;
  bool ok = MPI_Iallreduce(&minus_seen, &minus_agreed, 1, MPI_INT64_T, MPI_MAX, comm,
                           &request) == MPI_SUCCESS &&
            wait_until(&request, deadline, 50);
  const StepTotals t = stats.totals_of_first(ok ? -minus_agreed : seen);
  const double steps = t.steps > 0 ? static_cast<double>(t.steps) : 1.0;
  RankRecord mine{};
  mine.steps = t.steps;
  mine.steps_seen = seen;
  mine.peer_wait_s = t.peer_wait_s / steps;
  mine.step_s = t.step_s / steps;
  mine.wait_s = t.wait_s / steps;
  mine.negotiate_s = t.negotiate_s / steps;
  mine.copy_s = t.copy_s / steps;
  mine.transfer_s = t.transfer_s / steps;
  mine.bytes = static_cast<double>(t.bytes) / steps;
  mine.bus_bandwidth = t.transfer_s > 0 ? t.bus_bytes / t.transfer_s : 0.0;
  const std::vector<TensorWait> top = stats.top_tensors(kTopTensors);
  for (size_t i = 0; i < top.size(); ++i) {
    std::snprintf(mine.top[i].name, kNameBytes, "%s", top[i].name.c_str());
    mine.top[i].wait_s = top[i].wait_s / steps;
  }

  // The probe's size: the largest per-step volume of any rank, capped.
  int64_t my_bytes = static_cast<int64_t>(mine.bytes), probe_bytes = 0;
  ok = ok &&
       MPI_Iallreduce(&my_bytes, &probe_bytes, 1, MPI_INT64_T, MPI_MAX, comm, &request) ==
           MPI_SUCCESS &&
       wait_until(&request, deadline, 50);
  probe_bytes = std::min(probe_bytes, kProbeMaxBytes) / 4 * 4;
  if (ok && size > 1 && probe_bytes > 0)
    mine.reference_bandwidth = probe_reference(comm, size, probe_bytes, deadline, &ok);
  if (ok) step_stats().set_reference_bus_bandwidth(mine.reference_bandwidth);

  std::vector<RankRecord> all(rank == 0 ? static_cast<size_t>(size) : 0);
  if (ok)
    ok = MPI_Igather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, 0, comm,
                     &request) == MPI_SUCCESS &&
         wait_until(&request, deadline, 50);
  if (!ok) {
    HVD_LOG(Warning,
            "step summary skipped: not every rank took part within %.0f s (set HVD_SUMMARY or "
            "HVD_SUMMARY_FILE on every rank)",
            timeout_s);
    return;
  }
  if (rank != 0) return;

  std::vector<RankSummary> rows;
  std::map<std::string, double> waits;
  for (int r = 0; r < size; ++r) {
    const RankRecord& rec = all[static_cast<size_t>(r)];
    rows.push_back(RankSummary{r, rec.steps, rec.steps_seen, rec.step_s, rec.wait_s,
                               rec.negotiate_s, rec.copy_s, rec.transfer_s, rec.peer_wait_s,
                               rec.bytes, rec.bus_bandwidth, rec.reference_bandwidth});
    for (const auto& entry : rec.top) {
      std::string name(entry.name, strnlen(entry.name, kNameBytes));
      if (!name.empty()) waits[name] += entry.wait_s / size;
    }
  }
  std::vector<SummaryTensor> top_all;
  for (const auto& [name, wait] : waits) top_all.push_back(SummaryTensor{name, wait});
  std::stable_sort(top_all.begin(), top_all.end(),
                   [](const SummaryTensor& a, const SummaryTensor& b) { return a.wait_s > b.wait_s; });
  if (top_all.size() > static_cast<size_t>(kTopTensors)) top_all.resize(kTopTensors);

  // Standard error, as libhvd's log: standard output is the application's (hvd-bench
  // --json and training scripts print results there that programs parse).
  if (params.summary) {
    const std::string table = summary_table(rows, top_all, params.step_stats_warmup, probe_bytes);
    std::fwrite(table.data(), 1, table.size(), stderr);
    std::fflush(stderr);
  }
  if (!params.summary_file.empty()) {
    const std::string json = summary_json(rows, top_all, params.step_stats_warmup, probe_bytes);
    // Whole or not at all, never through a planted link: hvdrun --scaling reads it.
    std::string why;
    if (!write_file_atomically(params.summary_file, json, &why))
      HVD_LOG(Warning, "HVD_SUMMARY_FILE: %s", why.c_str());
  }
}

}  // namespace hvd
