// What the CUDA runtime says about this process's devices and pointers. Every
// function works in a build without CUDA and on a machine without a driver or GPU:
// it then reports no device, or fails with HVD_ERR_CUDA and says why.
#pragma once

#include <string>

#include "base/error.h"

namespace hvd {

// Devices visible to this process (CUDA_VISIBLE_DEVICES applied by CUDA itself);
// 0 with *why telling the reason when there are none. Cached after the first call.
int cuda_device_count(std::string* why);

// "0000:07:00.0" (lower case, as hwloc prints it) of a device ordinal.
Error cuda_pci_bus_id(int device, std::string* out);

// Makes device current on the calling thread (each thread has its own current device).
Error cuda_set_device(int device);
Error cuda_get_device(int* device);

enum class MemoryKind { Unknown, Host, PinnedHost, Device, Managed };

// Where ptr points, as cudaPointerGetAttributes tells; Unknown when CUDA cannot tell
// (no CUDA build, no driver). *device is the owning device for Device memory.
MemoryKind memory_kind(const void* ptr, int* device);

// Checks that ptr suits the device an operation names (HVD_DEVICE_CPU or an ordinal):
// device memory given as CPU, host memory given as a device, or memory of another
// device is HVD_ERR_INVALID_ARGUMENT; managed memory suits both. what names the
// argument in the message ("tensor 'w' send buffer").
Error check_pointer(const void* ptr, int device, const char* what);

}  // namespace hvd
