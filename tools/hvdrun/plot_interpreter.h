// The Python that draws --plot: the one the user named (HVDRUN_PYTHON), else the job's
// own interpreter when the command is one (it is the one known to have the user's
// packages: `hvdrun ... /usr/bin/python3 train.py`), else python3 from PATH.
#pragma once

#include <string>
#include <vector>

namespace hvdrun {

struct PlotInterpreter {
  std::string program;  // run as given: a path, or a name looked up on PATH
  std::string origin;   // why this one, for messages: "the job's interpreter", ...
};

// Whether program names a Python interpreter: python, python3, python3.11, pypy3, by
// name or by path.
bool is_python_interpreter(const std::string& program);

// hvdrun_python: HVDRUN_PYTHON's value, nullptr when unset.
PlotInterpreter choose_plot_interpreter(const std::vector<std::string>& command,
                                        const char* hvdrun_python);

}  // namespace hvdrun
