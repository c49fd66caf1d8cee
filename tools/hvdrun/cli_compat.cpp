#include "cli_compat.h"

#include <cstring>

#include <CLI/CLI.hpp>
#include <utility>

namespace hvdrun {

// horovodrun's single-dash long options, which CLI11 cannot declare.
std::string normalize_alias(const std::string& tok) {
  static const std::pair<const char*, const char*> aliases[] = {
      {"-np", "--num-proc"},
      {"-cb", "--check-build"},
      {"-hostfile", "--hostfile"},
      {"-prefix-timestamp", "--prefix-output-with-timestamp"},
      {"--prefix-timestamp", "--prefix-output-with-timestamp"}};
  for (const auto& [from, to] : aliases) {
    std::string f = from;
    if (tok == f) return to;
    if (tok.rfind(f + "=", 0) == 0) return std::string(to) + tok.substr(f.size());
  }
  return tok;
}

namespace {

struct RefusedFlag {
  const char* name;
  const char* message;  // why, and what to do instead
};
const RefusedFlag kRefusedFlags[] = {
    {"--gloo", "libhvd has no Gloo controller; hvdrun always runs the job on MPI, so leave --gloo out"},
    {"--jsrun", "hvdrun starts jobs with MPICH, Open MPI or Intel MPI, not IBM's jsrun; leave --jsrun out"},
};

}  // namespace

// horovodrun flags hvdrun refuses, with what to do instead: the job would not be
// the one asked for.
std::optional<std::string> refused_flag(const std::string& name) {
  for (const RefusedFlag& r : kRefusedFlags)
    if (name == r.name) return name + ": " + r.message;
  return std::nullopt;
}

std::string refused_flags_help() {
  std::string text =
      "REFUSED HOROVODRUN FLAGS\n"
      "    These horovodrun flags stop hvdrun with status 2 and a message saying what\n"
      "    to do instead, since the job would not be the one asked for:\n";
  for (const RefusedFlag& r : kRefusedFlags) {
    const char* semicolon = std::strchr(r.message, ';');
    text += std::string("    ") + r.name + ": " +
            std::string(r.message, semicolon ? static_cast<size_t>(semicolon - r.message)
                                             : std::strlen(r.message)) +
            ".\n";
  }
  return text + "\n";
}

namespace {

// horovodrun's flags that mean nothing for libhvd on MPI, each with why.
struct IneffectiveFlag {
  const char* name;
  const char* value_type;  // nullptr: a switch
  const char* why;
};
const IneffectiveFlag kIneffectiveFlags[] = {
    {"--start-timeout", "S",
     "horovodrun's limit on its own checks and task services before the ranks start; "
     "hvdrun runs none, the MPI launcher starts the ranks"},
    {"--disable-cache", nullptr,
     "horovodrun caches its host checks for 60 minutes; hvdrun keeps no cache (it "
     "checks the hosts at every run). libhvd's response cache: --cache-capacity 0"},
    {"--gloo-timeout-seconds", "S", "libhvd has no Gloo; it always runs on MPI"},
    {"--ccl-bgt-affinity", "CORE", "libhvd has no oneCCL backend; it runs on MPI (and NCCL)"},
    {"--num-nccl-streams", "N", "libhvd runs its NCCL operations on one stream per device"},
    {"--mpi-threads-disable", nullptr,
     "libhvd calls MPI from its background thread and needs MPI_THREAD_SERIALIZED or "
     "higher (it asks for MPI_THREAD_MULTIPLE)"},
    {"--torus-allreduce", nullptr,
     "libhvd has no 2D torus allreduce; --hierarchical-allreduce reduces within each "
     "node first"},
    {"--log-with-timestamp", nullptr, "libhvd's log lines carry no timestamp"},
    {"--no-log-hide-timestamp", nullptr, "libhvd's log lines carry no timestamp"},
};

}  // namespace

std::optional<std::string> ineffective_flag_reason(const std::string& flag) {
  for (const IneffectiveFlag& f : kIneffectiveFlags)
    if (flag == f.name) return std::string(f.why);
  return std::nullopt;
}

void add_ineffective_horovodrun_flags(CLI::App& app, LaunchOptions& o) {
  // Accepted, so that a Horovod command line runs unchanged, each with a note saying
  // why it does nothing.
  const std::string compat = "horovodrun flags without effect here (a note says why)";
  for (const IneffectiveFlag& f : kIneffectiveFlags) {
    const std::string name = f.name, why = f.why;
    auto note = [&o, name, why] { o.notices.push_back(name + " has no effect: " + why); };
    CLI::Option* opt =
        f.value_type
            ? app.add_option_function<std::string>(name, [note](const std::string&) { note(); }, why)
                  ->type_name(f.value_type)
            : app.add_flag_callback(name, note, why);
    opt->group(compat);
  }
  // The defaults, spelled out.
  for (const char* name : {"--no-mpi-threads-disable", "--no-torus-allreduce"})
    app.add_flag_callback(name, [] {}, "The default")->group(compat);
  app.add_flag_callback(
         "--log-without-timestamp", [] {}, "libhvd's log lines carry no timestamp: nothing to hide")
      ->group(compat);
  app.add_flag_callback(
         "--log-hide-timestamp", [] {}, "libhvd's log lines carry no timestamp: nothing to hide")
      ->group(compat);
}

}  // namespace hvdrun
