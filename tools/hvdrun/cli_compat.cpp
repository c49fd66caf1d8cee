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

// horovodrun's elastic flags: one reason, one remedy.
const char* const kElasticFlags[] = {"--min-np",        "--min-num-proc",
                                     "--max-np",        "--max-num-proc",
                                     "--slots-per-host", "--elastic-timeout",
                                     "--reset-limit",   "--blacklist-cooldown-range",
                                     "--host-discovery-script"};

struct RefusedFlag {
  const char* name;
  const char* message;  // why, and what to do instead
};
const RefusedFlag kOtherRefusedFlags[] = {
    {"--gloo", "libhvd has no Gloo controller; hvdrun always runs the job on MPI, so leave --gloo out"},
    {"--jsrun", "hvdrun starts jobs with MPICH, Open MPI or Intel MPI, not IBM's jsrun; leave --jsrun out"},
    {"--config-file",
     "hvdrun does not read Horovod's YAML parameter files; give each parameter as its flag "
     "(fusion_threshold_mb: 32 is --fusion-threshold-mb 32)"},
};

const char kElasticMessage[] =
    "elastic training (ranks joining and leaving a running job) is not supported by libhvd; "
    "run a fixed number of ranks with -np and -H or --hostfile, and restart the job from its "
    "last checkpoint if a host fails";

}  // namespace

// horovodrun flags hvdrun refuses, with what to do instead: the job would not be
// the one asked for.
std::optional<std::string> refused_flag(const std::string& name) {
  for (const char* e : kElasticFlags)
    if (name == e) return name + ": " + kElasticMessage;
  for (const RefusedFlag& r : kOtherRefusedFlags)
    if (name == r.name) return name + ": " + r.message;
  return std::nullopt;
}

std::string refused_flags_help() {
  std::string text =
      "REFUSED HOROVODRUN FLAGS\n"
      "    These horovodrun flags stop hvdrun with status 2 and a message saying what\n"
      "    to do instead, since the job would not be the one asked for:\n";
  std::string line = "   ";
  for (const char* e : kElasticFlags) {
    if (line.size() + 1 + std::strlen(e) + 1 > 80) {
      text += line + "\n";
      line = "   ";
    }
    line += std::string(" ") + e + ",";
  }
  line.back() = ':';
  text += line + "\n        elastic training; libhvd runs a fixed number of ranks.\n";
  for (const RefusedFlag& r : kOtherRefusedFlags) {
    const char* semicolon = std::strchr(r.message, ';');
    text += std::string("    ") + r.name + ": " +
            std::string(r.message, semicolon ? static_cast<size_t>(semicolon - r.message)
                                             : std::strlen(r.message)) +
            ".\n";
  }
  return text + "\n";
}

void add_ineffective_horovodrun_flags(CLI::App& app, LaunchOptions& o) {
  // horovodrun's flags that mean nothing for libhvd on MPI: accepted, so that a
  // Horovod command line runs unchanged, each with a note saying why it does nothing.
  const std::string compat = "horovodrun flags without effect here (a note says why)";
  auto note_flag = [&](const std::string& name, const std::string& why) {
    app.add_flag_callback(
           name, [&o, name, why] { o.notices.push_back(name + " has no effect: " + why); }, why)
        ->group(compat);
  };
  auto note_option = [&](const std::string& name, const std::string& type, const std::string& why) {
    app.add_option_function<std::string>(
           name,
           [&o, name, why](const std::string&) {
             o.notices.push_back(name + " has no effect: " + why);
           },
           why)
        ->type_name(type)
        ->group(compat);
  };
  note_option("--start-timeout", "S",
              "horovodrun's limit on its own checks and task services before the ranks start; "
              "hvdrun runs none, the MPI launcher starts the ranks");
  note_flag("--disable-cache",
            "horovodrun caches its host checks for 60 minutes; hvdrun keeps no cache (it "
            "checks the hosts at every run). libhvd's response cache: --cache-capacity 0");
  note_option("--gloo-timeout-seconds", "S", "libhvd has no Gloo; it always runs on MPI");
  note_option("--num-nccl-streams", "N",
              "libhvd runs its NCCL operations on one stream per device");
  note_flag("--mpi-threads-disable",
            "libhvd calls MPI from its background thread and needs MPI_THREAD_SERIALIZED or "
            "higher (it asks for MPI_THREAD_MULTIPLE)");
  app.add_flag_callback(
         "--no-mpi-threads-disable", [] {}, "The default")
      ->group(compat);
  note_flag("--torus-allreduce",
            "libhvd has no 2D torus allreduce; --hierarchical-allreduce reduces within each "
            "node first");
  app.add_flag_callback(
         "--no-torus-allreduce", [] {}, "The default")
      ->group(compat);
  note_flag("--log-with-timestamp", "libhvd's log lines carry no timestamp");
  note_flag("--no-log-hide-timestamp", "libhvd's log lines carry no timestamp");
  app.add_flag_callback(
         "--log-without-timestamp", [] {}, "libhvd's log lines carry no timestamp: nothing to hide")
      ->group(compat);
  app.add_flag_callback(
         "--log-hide-timestamp", [] {}, "libhvd's log lines carry no timestamp: nothing to hide")
      ->group(compat);
}

}  // namespace hvdrun
