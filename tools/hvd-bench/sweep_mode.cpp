#include "sweep_mode.h"

#include <cstdio>
#include <string>
#include <vector>

#include <hvd/hvd.h>

#include "comm.h"
#include "dtypes.h"
#include "json.h"
#include "stats.h"
#include "sweep_case.h"

namespace hvdbench {

namespace {

struct Placement {
  bool available = false;          // the API has this layout at all
  hvd_status_t status = HVD_SUCCESS;
  std::string error;               // libhvd's message when status is not success
  Stats hvd_us;
  bool has_mpi = false;
  Stats mpi_us;
  int64_t wrong = -1;              // -1: not checked
};

std::vector<int64_t> sizes(const Options& o) {
  std::vector<int64_t> out;
  for (int64_t b = o.min_bytes; b <= o.max_bytes;) {
    out.push_back(b);
    int64_t next = o.step_bytes ? b + o.step_bytes : b * o.step_factor;
    if (next <= b) break;  // -b 0 with -f, or overflow
    b = next;
  }
  return out;
}

// The first call is never timed: it also tells whether libhvd has this operation.
// A refusal is decided from the arguments, the same way on every rank.
Placement measure(SweepCase& c, bool in_place, const Options& o) {
  Placement p;
  p.available = true;
  c.fill(in_place);
  p.status = c.run_libhvd(in_place);
  int worst = static_cast<int>(p.status);
  MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (worst != HVD_SUCCESS) {
    if (p.status != HVD_SUCCESS) p.error = hvd_last_error();
    p.status = static_cast<hvd_status_t>(worst);
    return p;
  }
  for (int i = 1; i < o.warmup; ++i) {
    c.fill(in_place);
    check_hvd(c.run_libhvd(in_place), c.name());
  }

  std::vector<double> hvd_s, mpi_s;
  int64_t wrong = 0;
  for (int i = 0; i < o.iters; ++i) {
    if (o.baseline) {
      c.fill(in_place);
      double start = now_seconds();
      p.has_mpi = c.run_mpi(in_place);
      if (p.has_mpi) mpi_s.push_back(now_seconds() - start);
    }
    if (o.check || in_place) c.fill(in_place);
    double start = now_seconds();
    check_hvd(c.run_libhvd(in_place), c.name());
    hvd_s.push_back(now_seconds() - start);
    if (o.check) wrong += c.wrong(in_place);
  }
  max_over_ranks(&hvd_s);
  p.hvd_us = scaled(summarize(hvd_s), 1e6);
  if (p.has_mpi) {
    max_over_ranks(&mpi_s);
    p.mpi_us = scaled(summarize(mpi_s), 1e6);
  }
  if (o.check) p.wrong = sum_over_ranks(wrong);
  return p;
}

const char* status_word(hvd_status_t s) {
  return s == HVD_ERR_UNSUPPORTED ? "unsupported" : s == HVD_ERR_INVALID_ARGUMENT ? "invalid" : "failed";
}

void print_header(const Options& o, const SweepCase& c, int size) {
  std::printf("# hvd-bench sweep: %s, %s, %d ranks, %d iterations after %d warm-up; time = "
              "median (us) of the slowest rank; GB = 1e9%s\n",
              c.name(), o.dtype.c_str(), size, o.iters, o.warmup,
              !o.baseline          ? ""
              : o.redop == "adasum" ? "; mpi = MPI_Allreduce with MPI_SUM on the same bytes (Adasum has no "
                                      "MPI counterpart), ratio = mpi / libhvd"
                                    : "; mpi = the same collective in raw MPI, ratio = mpi / libhvd");
  const char* extra = o.baseline ? "  mpi(us)   ratio" : "";
  const char* group_pad = o.baseline ? "                 " : "";
  std::printf("# %58s %-35s%s %s\n", "", "out-of-place", group_pad, "in-place");
  std::printf("# %10s %14s %9s %7s %6s %10s %8s %8s %7s%s %10s %8s %8s %7s%s\n", "size", "count",
              "type", "redop", "root", "time", "algbw", "busbw", "#wrong", extra, "time", "algbw",
              "busbw", "#wrong", extra);
  std::printf("# %10s %14s %9s %7s %6s %10s %8s %8s %7s%s %10s %8s %8s %7s%s\n", "(B)",
              "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", o.baseline ? "   (us)        " : "",
              "(us)", "(GB/s)", "(GB/s)", "", o.baseline ? "   (us)        " : "");
}

std::string group(const Options& o, const SweepCase& c, const Placement& p, int64_t bytes) {
  char buf[160];
  const int width = o.baseline ? 17 : 0;
  if (!p.available) {
    std::snprintf(buf, sizeof buf, " %10s %8s %8s %7s%*s", "n/a", "", "", "", width, "");
  } else if (p.status != HVD_SUCCESS) {
    std::snprintf(buf, sizeof buf, " %10s %8s %8s %7s%*s", status_word(p.status), "", "", "",
                  width, "");
  } else {
    double algbw = p.hvd_us.median > 0 ? bytes / (p.hvd_us.median * 1e-6) / 1e9 : 0;
    std::string wrong = p.wrong < 0 ? "N/A" : std::to_string(p.wrong);
    int n = std::snprintf(buf, sizeof buf, " %10.2f %8.2f %8.2f %7s", p.hvd_us.median, algbw,
                          algbw * c.bus_factor(), wrong.c_str());
    if (o.baseline) {
      if (p.has_mpi)
        std::snprintf(buf + n, sizeof buf - n, " %8.2f %7.3f", p.mpi_us.median,
                      p.mpi_us.median / p.hvd_us.median);
      else
        std::snprintf(buf + n, sizeof buf - n, " %8s %7s", "-", "");
    }
  }
  return buf;
}

void print_json(const Options& o, const SweepCase& c, const Placement& p, bool in_place,
                int64_t bytes, int64_t count, int size) {
  if (!p.available) return;
  JsonLine line;
  line.add("mode", "sweep")
      .add("op", c.name())
      .add("ranks", size)
      .add("tensors", 1)
      .add("bytes", static_cast<long long>(bytes))
      .add("count", static_cast<long long>(count))
      .add("dtype", o.dtype)
      .add("in_place", in_place);
  if (c.uses_redop()) line.add("redop", o.redop);
  if (c.uses_root()) line.add("root", o.root);
  if (p.status != HVD_SUCCESS) {
    line.add("status", status_word(p.status)).add("error", p.error);
  } else {
    double algbw = p.hvd_us.median > 0 ? bytes / (p.hvd_us.median * 1e-6) / 1e9 : 0;
    line.add("hvd_ms", scaled(p.hvd_us, 1e-3));
    if (p.has_mpi) line.add("per_tensor_ms", scaled(p.mpi_us, 1e-3));
    if (p.has_mpi) line.add("vs_per_tensor", p.mpi_us.median / p.hvd_us.median);
    line.add("algbw_gbs", algbw).add("busbw_gbs", algbw * c.bus_factor());
    if (p.wrong >= 0) line.add("wrong", static_cast<long long>(p.wrong));
  }
  std::printf("%s\n", line.str().c_str());
}

}  // namespace

int run_sweep_mode(const Options& o) {
  const int rank = world_rank(), size = world_size();
  if (o.root >= size) {
    if (rank == 0)
      std::fprintf(stderr, "hvd-bench: root %d is not a rank (the job has %d ranks)\n", o.root, size);
    return 2;
  }
  const SweepSetting setting{find_dtype(o.dtype), o.redop, o.root, rank, size};
  int64_t total_wrong = 0;
  for (const std::string& name : o.collectives) {
    std::unique_ptr<SweepCase> c = make_sweep_case(name, setting);
    if (rank == 0 && !o.json) print_header(o, *c, size);
    std::string refusal;  // libhvd's first refusal, printed once under the table
    for (int64_t requested : sizes(o)) {
      int64_t count = c->prepare(requested);
      if (count == 0) continue;  // too small to give every rank an element
      const int64_t bytes = count * static_cast<int64_t>(setting.dtype->size);
      Placement out_of_place, in_place;
      if (c->has_out_of_place()) out_of_place = measure(*c, false, o);
      if (c->has_in_place()) in_place = measure(*c, true, o);
      for (const Placement* p : {&out_of_place, &in_place})
        if (refusal.empty() && p->status != HVD_SUCCESS)
          refusal = std::string(status_word(p->status)) + ": " + p->error;
      total_wrong += std::max<int64_t>(0, out_of_place.wrong) + std::max<int64_t>(0, in_place.wrong);
      if (rank != 0) continue;
      if (o.json) {
        print_json(o, *c, out_of_place, false, bytes, count, size);
        print_json(o, *c, in_place, true, bytes, count, size);
      } else {
        std::printf("  %10lld %14lld %9s %7s %6d%s%s\n", static_cast<long long>(bytes),
                    static_cast<long long>(count), o.dtype.c_str(),
                    c->uses_redop() ? o.redop.c_str() : "none", c->uses_root() ? o.root : -1,
                    group(o, *c, out_of_place, bytes).c_str(),
                    group(o, *c, in_place, bytes).c_str());
      }
      std::fflush(stdout);
    }
    if (rank == 0 && !o.json && !refusal.empty()) std::printf("# %s\n", refusal.c_str());
  }
  if (rank == 0 && total_wrong)
    std::fprintf(stderr, "hvd-bench: %lld wrong elements (see #wrong)\n",
                 static_cast<long long>(total_wrong));
  return total_wrong ? 1 : 0;
}

}  // namespace hvdbench
