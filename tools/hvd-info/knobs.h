// The configuration knobs as text, from the one registry (params/params.cpp): for a
// person at a terminal, and as the Markdown table of docs/configuration.md.
#pragma once

#include <string>

namespace hvdinfo {

// Each knob, group by group (params/params.h's ParamGroup), as comment lines (meaning; type and default) and NAME=value, the value the
// runtime would use in this environment (as ucc_info -c prints UCC's).
std::string knobs_text();

// The tables of docs/configuration.md, one per group under a heading: variable, type, default, whether rank 0's value
// holds on every rank, meaning. Defaults, not this environment's values.
std::string knobs_markdown();

}  // namespace hvdinfo
