// `hvdrun --check-build` and `hvdrun --version`: what the installed libhvd offers.
#pragma once

#include <string>

namespace hvdrun {

// The report horovodrun --check-build gives, for libhvd's components.
std::string check_build_report();

std::string version_report();

}  // namespace hvdrun
