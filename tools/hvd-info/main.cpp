// hvd-info: what libhvd can be told. Every environment knob with its type, default,
// meaning and the value this environment gives it, read from the library's own
// registry, so the list cannot drift from what the library reads.
#include <cstdio>
#include <cstring>
#include <string>

#include "knobs.h"

namespace {

const char kUsage[] =
    "usage: hvd-info [-c | --markdown | --version | -h]\n"
    "  -c, --knobs   every environment knob libhvd reads: its meaning, type and default,\n"
    "                then NAME=value as this environment sets it (the default)\n"
    "  --markdown    the same knobs as the Markdown table of docs/configuration.md\n"
    "                (defaults, not this environment's values)\n"
    "  --version     libhvd's version\n";

}  // namespace

int main(int argc, char** argv) {
  const std::string arg = argc > 1 ? argv[1] : "-c";
  if (argc > 2) {
    std::fprintf(stderr, "hvd-info: one option at most, got %d\n%s", argc - 1, kUsage);
    return 2;
  }
  if (arg == "-c" || arg == "--knobs") {
    std::fputs(hvdinfo::knobs_text().c_str(), stdout);
  } else if (arg == "--markdown") {
    std::fputs(hvdinfo::knobs_markdown().c_str(), stdout);
  } else if (arg == "--version") {
    std::printf("hvd-info (libhvd) %s\n", HVD_INFO_VERSION);
  } else if (arg == "-h" || arg == "--help") {
    std::fputs(kUsage, stdout);
  } else {
    std::fprintf(stderr, "hvd-info: unknown option '%s'\n%s", arg.c_str(), kUsage);
    return 2;
  }
  return 0;
}
