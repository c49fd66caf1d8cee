#include "ops/nccl/nccl_loader.h"

#include <dlfcn.h>

#include <mutex>

#include "base/log.h"

namespace hvd {

namespace {

// The way around NCCL that every refusal below offers last.
#define HVD_STAGE_THROUGH_HOST \
  "set HOROVOD_GPU_OPERATIONS=MPI to stage device tensors through host memory"

// What a user can do when libnccl.so.2 cannot be loaded or used.
constexpr const char* kWhatToDo =
    "install NCCL 2.18 or later where the dynamic linker finds libnccl.so.2 (ldconfig or "
    "LD_LIBRARY_PATH), set HVD_NCCL_LIBRARY to the file's path, or " HVD_STAGE_THROUGH_HOST;

std::mutex load_mutex;
NcclApi loaded_api;
bool loaded = false;  // under load_mutex; once true, loaded_api never changes

std::string dl_failure() {
  const char* text = dlerror();
  return text ? text : "unknown reason";
}

template <typename Fn>
bool find_symbol(void* handle, const char* name, Fn* out, std::string* missing) {
  *out = reinterpret_cast<Fn>(dlsym(handle, name));
  if (!*out && missing->empty()) *missing = name;
  return *out != nullptr;
}

// The file a symbol of the library lives in.
std::string file_of(void* symbol) {
  Dl_info info;
  if (symbol && dladdr(symbol, &info) && info.dli_fname) return info.dli_fname;
  return "?";
}

// Fills api from handle; false with *why when a function is missing or NCCL is too old.
bool bind(void* handle, NcclApi* api, std::string* why) {
  std::string missing;
  find_symbol(handle, "ncclGetVersion", &api->GetVersion, &missing);
  find_symbol(handle, "ncclGetErrorString", &api->GetErrorString, &missing);
  find_symbol(handle, "ncclGetLastError", &api->GetLastError, &missing);
  find_symbol(handle, "ncclGetUniqueId", &api->GetUniqueId, &missing);
  find_symbol(handle, "ncclCommInitRank", &api->CommInitRank, &missing);
  find_symbol(handle, "ncclCommDestroy", &api->CommDestroy, &missing);
  find_symbol(handle, "ncclCommAbort", &api->CommAbort, &missing);
  find_symbol(handle, "ncclGroupStart", &api->GroupStart, &missing);
  find_symbol(handle, "ncclGroupEnd", &api->GroupEnd, &missing);
  find_symbol(handle, "ncclAllReduce", &api->AllReduce, &missing);
  find_symbol(handle, "ncclBroadcast", &api->Broadcast, &missing);
  find_symbol(handle, "ncclReduce", &api->Reduce, &missing);
  find_symbol(handle, "ncclAllGather", &api->AllGather, &missing);
  find_symbol(handle, "ncclReduceScatter", &api->ReduceScatter, &missing);
  find_symbol(handle, "ncclSend", &api->Send, &missing);
  find_symbol(handle, "ncclRecv", &api->Recv, &missing);
  api->location = file_of(reinterpret_cast<void*>(api->GetVersion));
  // The version first: a too-old NCCL lacks functions, and its version says why.
  if (api->GetVersion && api->GetVersion(&api->version) != ncclSuccess) {
    *why = api->location + " does not tell its version (ncclGetVersion failed)";
    return false;
  }
  if (api->GetVersion && api->version < kNcclMinVersion) {
    *why = "NCCL " + nccl_version_text(api->version) + " at " + api->location +
           " is older than " + nccl_version_text(kNcclMinVersion) +
           ", the oldest libhvd supports";
    return false;
  }
  if (!missing.empty()) {
    *why = (api->GetVersion ? api->location : std::string("the library")) +
           " is not an NCCL libhvd can use: it has no " + missing;
    return false;
  }
  return true;
}

// Binds an opened candidate; on failure closes it and sets *why.
bool try_candidate(void* handle, const char* source, NcclApi* api, std::string* why) {
  std::string reason;
  if (bind(handle, api, &reason)) {
    api->source = source;
    return true;
  }
  dlclose(handle);
  *why = reason;
  return false;
}

}  // namespace

std::string nccl_version_text(int code) {
  // NCCL 2.9 changed the code from MAJOR*1000+MINOR*100+PATCH to MAJOR*10000+...
  const bool old_form = code < 20900;
  const int major = old_form ? code / 1000 : code / 10000;
  const int minor = old_form ? code % 1000 / 100 : code % 10000 / 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(code % 100);
}

const NcclApi* load_nccl(const std::string& explicit_path, Error* error) {
  std::lock_guard<std::mutex> lock(load_mutex);
  if (loaded) return &loaded_api;
  NcclApi api{};
  std::string why;
  // 1. The framework's NCCL, if it loaded one: two NCCLs in one process would each
  //    want the GPU, and the framework's is the one its own calls use.
  if (void* handle = dlopen(kNcclSoname, RTLD_NOW | RTLD_NOLOAD)) {
    if (!try_candidate(handle, "already loaded in the process", &api, &why)) {
      *error = make_error(HVD_ERR_NCCL,
                          "the NCCL already loaded in this process cannot be used: %s; load "
                          "NCCL 2.18 or later in the framework, or " HVD_STAGE_THROUGH_HOST,
                          why.c_str());
      return nullptr;
    }
  } else if (!explicit_path.empty()) {
    // 2. The user's choice: no fallback to another NCCL when it fails.
    void* opened = dlopen(explicit_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!opened) why = dl_failure();
    if (!opened || !try_candidate(opened, "HVD_NCCL_LIBRARY", &api, &why)) {
      *error = make_error(HVD_ERR_NCCL,
                          "NCCL could not be loaded from HVD_NCCL_LIBRARY=%s: %s; point "
                          "HVD_NCCL_LIBRARY at NCCL 2.18 or later (libnccl.so.2), unset it to "
                          "load libnccl.so.2 where the dynamic linker finds it, or " HVD_STAGE_THROUGH_HOST,
                          explicit_path.c_str(), why.c_str());
      return nullptr;
    }
  } else {
    // 3. The soname, where the dynamic linker looks.
    void* opened = dlopen(kNcclSoname, RTLD_NOW | RTLD_LOCAL);
    if (!opened) why = dl_failure();
    if (!opened || !try_candidate(opened, "the dynamic linker's search path", &api, &why)) {
      *error = make_error(HVD_ERR_NCCL, "NCCL (%s) could not be loaded: %s; %s", kNcclSoname,
                          why.c_str(), kWhatToDo);
      return nullptr;
    }
  }
  loaded_api = api;
  loaded = true;
  HVD_LOG(Info, "NCCL %s from %s (%s)", nccl_version_text(api.version).c_str(),
          api.location.c_str(), api.source.c_str());
  return &loaded_api;
}

int nccl_version_in_process() {
  std::lock_guard<std::mutex> lock(load_mutex);
  if (loaded) return loaded_api.version;
  void* handle = dlopen(kNcclSoname, RTLD_NOW | RTLD_NOLOAD);
  if (!handle) return 0;
  int version = 0;
  auto get_version = reinterpret_cast<decltype(&ncclGetVersion)>(dlsym(handle, "ncclGetVersion"));
  if (!get_version || get_version(&version) != ncclSuccess) version = 0;
  dlclose(handle);  // NOLOAD took a reference; the library stays with its owner
  return version;
}

}  // namespace hvd
