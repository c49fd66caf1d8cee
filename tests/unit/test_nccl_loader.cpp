// Which NCCL libhvd loads, and what it says when it cannot: an NCCL already in the
// process first (a framework's), then HVD_NCCL_LIBRARY's file, then libnccl.so.2; too
// old or absent is HVD_ERR_NCCL with what was looked for and what to set. No GPU
// needed: stub libraries named libnccl.so.2 (nccl_stub.c) stand in for NCCL. One case
// per process, since a loaded NCCL stays loaded.
//   test_nccl_loader missing
//   test_nccl_loader explicit|already-loaded STUB     (a stub of NCCL 2.29.5)
//   test_nccl_loader too-old|too-old-explicit STUB    (a stub of NCCL 2.17.0)
#include <dlfcn.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "ops/nccl/nccl_loader.h"
#include "../common/check.h"

using namespace hvd;


namespace {

const char* kMissing = "/nonexistent/hvd-test/libnccl.so.2";

bool mentions(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return true;
  std::fprintf(stderr, "\"%s\" does not mention \"%s\"\n", text.c_str(), part.c_str());
  return false;
}

bool nccl_in_process() {
  void* handle = dlopen(kNcclSoname, RTLD_NOW | RTLD_NOLOAD);
  if (handle) dlclose(handle);
  return handle != nullptr;
}

std::string real(const std::string& path) {
  char* resolved = realpath(path.c_str(), nullptr);
  std::string out = resolved ? resolved : path;
  free(resolved);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const std::string stub = argc > 2 ? argv[2] : "";
  Error err;
  if (mode == "missing") {
    // Nothing in the process, and HVD_NCCL_LIBRARY names a missing file: an error
    // that names the file and the knobs, every time asked, and nothing loaded.
    CHECK(!nccl_in_process());
    CHECK(nccl_version_in_process() == 0);
    for (int attempt = 0; attempt < 2; ++attempt) {
      err = Error::success();
      CHECK(load_nccl(kMissing, &err) == nullptr);
      CHECK(err.status == HVD_ERR_NCCL);
      CHECK(mentions(err.message, std::string("HVD_NCCL_LIBRARY=") + kMissing));
      CHECK(mentions(err.message, "HOROVOD_GPU_OPERATIONS=MPI"));
    }
    CHECK(!nccl_in_process());
    std::printf("nccl-loader missing: ok (%s)\n", err.message.c_str());
  } else if (mode == "explicit") {
    const NcclApi* api = load_nccl(stub, &err);
    CHECK(api != nullptr);
    CHECK(api->version == 22905);
    CHECK(api->source == "HVD_NCCL_LIBRARY");
    CHECK(real(api->location) == real(stub));
    CHECK(nccl_version_in_process() == 22905);
    // Loaded once: a later call, whatever path it names, gets the same NCCL.
    CHECK(load_nccl(kMissing, &err) == api);
    std::printf("nccl-loader explicit: ok (NCCL %s from %s)\n",
                nccl_version_text(api->version).c_str(), api->location.c_str());
  } else if (mode == "already-loaded") {
    // The framework loaded its NCCL: libhvd uses that one, not HVD_NCCL_LIBRARY's.
    CHECK(dlopen(stub.c_str(), RTLD_NOW | RTLD_GLOBAL) != nullptr);
    CHECK(nccl_version_in_process() == 22905);
    const NcclApi* api = load_nccl(kMissing, &err);
    CHECK(api != nullptr);
    CHECK(api->version == 22905);
    CHECK(api->source == "already loaded in the process");
    CHECK(real(api->location) == real(stub));
    std::printf("nccl-loader already-loaded: ok (NCCL %s from %s)\n",
                nccl_version_text(api->version).c_str(), api->location.c_str());
  } else if (mode == "too-old") {
    CHECK(dlopen(stub.c_str(), RTLD_NOW | RTLD_GLOBAL) != nullptr);
    CHECK(nccl_version_in_process() == 21700);
    CHECK(load_nccl("", &err) == nullptr);
    CHECK(err.status == HVD_ERR_NCCL);
    CHECK(mentions(err.message, "NCCL 2.17.0 at "));
    CHECK(mentions(err.message, "older than 2.18.0"));
    CHECK(mentions(err.message, "HOROVOD_GPU_OPERATIONS=MPI"));
    std::printf("nccl-loader too-old: ok (%s)\n", err.message.c_str());
  } else if (mode == "too-old-explicit") {
    CHECK(load_nccl(stub, &err) == nullptr);
    CHECK(err.status == HVD_ERR_NCCL);
    CHECK(mentions(err.message, "HVD_NCCL_LIBRARY=" + stub));
    CHECK(mentions(err.message, "older than 2.18.0"));
    CHECK(!nccl_in_process());  // refused, and not left loaded
    std::printf("nccl-loader too-old-explicit: ok (%s)\n", err.message.c_str());
  } else {
    std::fprintf(stderr, "usage: %s missing | explicit|already-loaded|too-old|too-old-explicit STUB\n",
                 argv[0]);
    return 2;
  }
  return 0;
}
