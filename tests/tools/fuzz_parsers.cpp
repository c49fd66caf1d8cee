// libFuzzer target for hvdrun's text parsers: host lists, hostfiles, shell words,
// version banners, whole command lines and the step summaries --scaling reads. Every input must give a value or an
// error message, never a crash; quoting must read back to the same words.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "cli.h"
#include "hosts.h"
#include "mpi_detect.h"
#include "run_summary.h"
#include "shell_words.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto hosts = hvdrun::parse_host_list(text);
  if (hosts.ok() && hvdrun::total_slots(hosts.value()) < 1) std::abort();
  (void)hvdrun::parse_hostfile(text, "fuzz");
  (void)hvdrun::flavor_from_version_text(text);
  auto summary = hvdrun::parse_run_summary(text, "fuzz");
  if (summary.ok() && (summary->ranks < 1 || summary->steps < 0)) std::abort();

  auto words = hvdrun::split_shell_words(text);
  if (words.ok()) {
    auto again = hvdrun::split_shell_words(hvdrun::shell_join(words.value()));
    if (!again.ok() || again.value() != words.value()) std::abort();
    // The same words as a command line.
    (void)hvdrun::parse_command_line(words.value());
  }
  return 0;
}
