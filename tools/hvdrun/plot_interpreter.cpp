#include "plot_interpreter.h"

namespace hvdrun {

bool is_python_interpreter(const std::string& program) {
  const size_t slash = program.rfind('/');
  std::string name = slash == std::string::npos ? program : program.substr(slash + 1);
  for (const char* stem : {"python", "pypy"}) {
    const std::string s = stem;
    if (name.rfind(s, 0) != 0) continue;
    // What follows the stem is a version, if anything: "3", "3.11".
    const std::string version = name.substr(s.size());
    bool ok = version.empty() || (version[0] >= '0' && version[0] <= '9');
    for (char c : version) ok = ok && ((c >= '0' && c <= '9') || c == '.');
    if (ok) return true;
  }
  return false;
}

PlotInterpreter choose_plot_interpreter(const std::vector<std::string>& command,
                                        const char* hvdrun_python) {
  if (hvdrun_python && *hvdrun_python) return {hvdrun_python, "HVDRUN_PYTHON"};
  if (!command.empty() && is_python_interpreter(command[0]))
    return {command[0], "the job's interpreter"};
  return {"python3", "python3 from PATH"};
}

}  // namespace hvdrun
