// NCCL, found at run time. libhvd does not link NCCL: a framework from PyPI brings its
// own libnccl.so.2 (the nvidia-nccl wheel), and a library that linked another one by
// the same soname, loaded first, would be the one the framework gets, without the
// symbols it needs. So the NCCL backend calls NCCL through this table, filled the
// first time a GPU collective needs NCCL, from the first of:
//   1. an NCCL already loaded in the process (the framework's): libhvd shares it;
//   2. the file HVD_NCCL_LIBRARY names;
//   3. libnccl.so.2, where the dynamic linker finds it.
// The NCCL found must be at least kNcclMinVersion and have every function below;
// otherwise nothing is kept and the caller gets HVD_ERR_NCCL with a sentence saying
// what was looked for and what to set. Processes that never run a GPU collective never
// load NCCL.
//
// Thread-safe. A loaded NCCL stays loaded until the process ends; a failed load is
// tried again at the next call (the path may differ after a new hvd_init).
#pragma once

#include <nccl.h>

#include <string>

#include "base/error.h"

namespace hvd {

// NCCL 2.18: the oldest the project supports (DESIGN.md, Stack); every function below
// is older.
constexpr int kNcclMinVersion = 21800;
// The soname looked for in the process and then by the dynamic linker.
constexpr const char* kNcclSoname = "libnccl.so.2";

struct NcclApi {
  decltype(&ncclGetVersion) GetVersion;
  decltype(&ncclGetErrorString) GetErrorString;
  decltype(&ncclGetLastError) GetLastError;
  decltype(&ncclGetUniqueId) GetUniqueId;
  decltype(&ncclCommInitRank) CommInitRank;
  decltype(&ncclCommDestroy) CommDestroy;
  decltype(&ncclCommAbort) CommAbort;
  decltype(&ncclGroupStart) GroupStart;
  decltype(&ncclGroupEnd) GroupEnd;
  decltype(&ncclAllReduce) AllReduce;
  decltype(&ncclBroadcast) Broadcast;
  decltype(&ncclReduce) Reduce;
  decltype(&ncclAllGather) AllGather;
  decltype(&ncclReduceScatter) ReduceScatter;
  decltype(&ncclSend) Send;
  decltype(&ncclRecv) Recv;

  int version = 0;       // ncclGetVersion's code, e.g. 22809
  std::string location;  // the file it was loaded from
  std::string source;    // how it was found, for logs: "already loaded", "HVD_NCCL_LIBRARY", ...
};

// The loaded NCCL, loading it on the first call. explicit_path: HVD_NCCL_LIBRARY's
// value ("" when unset). On failure returns nullptr and sets *error (HVD_ERR_NCCL).
const NcclApi* load_nccl(const std::string& explicit_path, Error* error);

// The version code of the NCCL libhvd uses, without loading one: the loaded NCCL's, else
// that of an NCCL another library already loaded into the process, else 0.
int nccl_version_in_process();

// "2.28.9" for 22809 (and the pre-2.9 form, 2804, as "2.8.4").
std::string nccl_version_text(int code);

}  // namespace hvd
