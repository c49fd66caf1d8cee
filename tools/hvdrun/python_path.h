// The `horovod` stand-in of an install under a prefix, for ranks that find the
// install's packages through PYTHONPATH. The stand-in sits in a folder of its own beside
// the `hvd` package, added to sys.path by a .pth file; Python reads .pth files only in
// its site folders, never in a PYTHONPATH entry, so
//   PYTHONPATH=<prefix>/lib/python3.11/dist-packages hvdrun ... python3 train.py
// imports `hvd` but not `horovod`. hvdrun adds the folder for the ranks.
#pragma once

#include <optional>
#include <string>

namespace hvdrun {

// pythonpath with compat_dir appended when one of its entries is the folder that holds
// compat_dir (the same folder, however written) and none is compat_dir itself;
// nullopt when it needs nothing.
std::optional<std::string> pythonpath_with_horovod_compat(const std::string& pythonpath,
                                                          const std::string& compat_dir);

}  // namespace hvdrun
