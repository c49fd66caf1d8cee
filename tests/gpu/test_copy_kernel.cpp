// The batched copy kernel against the host copies (fusion/scale.h) for every dtype,
// plain, prescaled and averaged; one launch per call; ordering after the caller's
// stream; events for the host and for other streams; the pointer check.
#include <vector>

#include "fusion/scale.h"
#include "gpu_test_util.h"
#include "ops/device/batched_copy.h"
#include "ops/device/device_context.h"

using namespace hvd;
using namespace hvd_test;

namespace {

// Sizes that cross chunk boundaries, odd sizes and empty tensors.
std::vector<int64_t> sizes(size_t n) {
  const int64_t base[] = {1, 7, 8191, 16384, 40000, 0, 3, 100003};
  std::vector<int64_t> out;
  for (size_t i = 0; i < n; ++i) out.push_back(base[i % 8] + static_cast<int64_t>(i));
  return out;
}

void check_dtype(DeviceContext& ctx, BatchedCopier& copier, hvd_dtype_t dtype, size_t ntensors,
                 double factor, int divisor) {
  const size_t esize = dtype_size(dtype);
  const std::vector<int64_t> counts = sizes(ntensors);
  int64_t total = 0;
  for (int64_t c : counts) total += c;
  std::vector<std::vector<unsigned char>> inputs;
  std::vector<void*> srcs;
  for (size_t i = 0; i < ntensors; ++i) {
    inputs.push_back(random_tensor(dtype, counts[i], static_cast<uint32_t>(i * 31 + dtype)));
    srcs.push_back(to_device(inputs.back()));
  }
  DeviceBuffer fusion(ctx.stream());
  CHECK_OK(fusion.reserve(static_cast<size_t>(total) * esize));
  // In: every tensor into the fusion buffer, back to back.
  std::vector<CopyItem> in, out;
  std::vector<void*> dsts;
  size_t offset = 0;
  for (size_t i = 0; i < ntensors; ++i) {
    in.push_back({srcs[i], static_cast<char*>(fusion.data()) + offset, counts[i]});
    void* d = nullptr;
    CHECK_CUDA(cudaMalloc(&d, counts[i] * esize + 1));
    dsts.push_back(d);
    out.push_back({static_cast<char*>(fusion.data()) + offset, d, counts[i]});
    offset += counts[i] * esize;
  }
  const uint64_t before = copier.launches();
  CHECK_OK(copier.copy(in, dtype, factor, 1));
  CHECK_OK(copier.copy(out, dtype, 1.0, divisor));
  CHECK(copier.launches() == before + 2);  // one launch each, however many tensors
  DeviceEvent done;
  CHECK_OK(ctx.record(&done));
  CHECK_OK(done.synchronize());
  bool finished = false;
  CHECK_OK(done.query(&finished));
  CHECK(finished);

  for (size_t i = 0; i < ntensors; ++i) {
    std::vector<unsigned char> want(inputs[i].size()), mid(inputs[i].size());
    // On the device a float16 multiplies by the factor as a half (Horovod's kernels do).
    const double device_factor =
        dtype == HVD_FLOAT16 ? half_to_float(float_to_half(static_cast<float>(factor))) : factor;
    copy_scaled(mid.data(), inputs[i].data(), counts[i], dtype, device_factor);
    copy_averaged(want.data(), mid.data(), counts[i], dtype, divisor, 1.0);
    std::vector<unsigned char> got = to_host(dsts[i], want.size());
    if (got != want) {
      std::fprintf(stderr, "%s: tensor %zu of %zu (%lld elements), factor %g, divisor %d differs\n",
                   dtype_name(dtype), i, ntensors, static_cast<long long>(counts[i]), factor, divisor);
      std::exit(1);
    }
    cudaFree(srcs[i]);
    cudaFree(dsts[i]);
  }
}

void stream_ordering(DeviceContext& ctx, BatchedCopier& copier) {
  // The caller's stream writes the input just before the operation; the library
  // stream must see the new values, and the caller's stream must see the result
  // once it waits on the completion event.
  const int64_t n = 1 << 22;
  cudaStream_t user;
  CHECK_CUDA(cudaStreamCreateWithFlags(&user, cudaStreamNonBlocking));
  void *src_v, *dst_v, *host_v;
  CHECK_CUDA(cudaMalloc(&src_v, n * 4));
  CHECK_CUDA(cudaMalloc(&dst_v, n * 4));
  CHECK_CUDA(cudaMallocHost(&host_v, n * 4));
  float* src = static_cast<float*>(src_v);
  float* dst = static_cast<float*>(dst_v);
  float* host = static_cast<float*>(host_v);
  for (int round = 1; round <= 3; ++round) {
    for (int64_t i = 0; i < n; ++i) host[i] = static_cast<float>(round);
    CHECK_CUDA(cudaMemsetAsync(src, 0, n * 4, user));
    CHECK_CUDA(cudaMemcpyAsync(src, host, n * 4, cudaMemcpyHostToDevice, user));
    CHECK_OK(ctx.wait_for(user));
    CHECK_OK(copier.copy({{src, dst, n}}, HVD_FLOAT32, 2.0, 1));
    DeviceEvent done;
    CHECK_OK(ctx.record(&done));
    CHECK_OK(done.make_stream_wait(user));
    CHECK_CUDA(cudaMemcpyAsync(host, dst, n * 4, cudaMemcpyDeviceToHost, user));
    CHECK_CUDA(cudaStreamSynchronize(user));
    for (int64_t i = 0; i < n; i += 4099) CHECK(host[i] == 2.0f * round);
    CHECK(host[n - 1] == 2.0f * round);
  }
  cudaFree(src);
  cudaFree(dst);
  cudaFreeHost(host);
  cudaStreamDestroy(user);
}

// Step accounting's copy time: the GPU's clock around each timed copy, nothing when off.
void copy_timing(DeviceContext& ctx, BatchedCopier& copier) {
  const int64_t n = 1 << 24;  // 64 MB each way: long enough to read on any clock
  void *src = nullptr, *dst = nullptr;
  CHECK_CUDA(cudaMalloc(&src, n * 4));
  CHECK_CUDA(cudaMalloc(&dst, n * 4));
  CHECK(copier.timer().take_ns() == 0);
  CHECK_OK(copier.copy({{src, dst, n}}, HVD_FLOAT32, 1.0, 1));
  CHECK_OK(ctx.synchronize());
  CHECK(copier.timer().take_ns() == 0);  // off by default
  copier.timer().enable(true);
  for (int k = 0; k < 3; ++k) CHECK_OK(copier.copy({{src, dst, n}}, HVD_FLOAT32, 0.5, 1));
  CHECK_OK(ctx.synchronize());
  const int64_t ns = copier.timer().take_ns();
  CHECK(ns > 0 && ns < 1000000000);  // three copies of 64 MB: well under a second
  CHECK(copier.timer().take_ns() == 0);  // taken once
  copier.timer().enable(false);
  cudaFree(src);
  cudaFree(dst);
}

void pointer_checks() {
  void* d = nullptr;
  CHECK_CUDA(cudaMalloc(&d, 64));
  std::vector<char> h(64);
  void* pinned = nullptr;
  CHECK_CUDA(cudaMallocHost(&pinned, 64));
  void* managed = nullptr;
  CHECK_CUDA(cudaMallocManaged(&managed, 64));
  int owner = -1;
  CHECK(memory_kind(d, &owner) == MemoryKind::Device && owner == 0);
  CHECK(memory_kind(h.data(), nullptr) == MemoryKind::Host);
  CHECK(memory_kind(pinned, nullptr) == MemoryKind::PinnedHost);
  CHECK(memory_kind(managed, nullptr) == MemoryKind::Managed);
  CHECK(check_pointer(d, 0, "t").ok());
  CHECK(check_pointer(d, HVD_DEVICE_CPU, "t").status == HVD_ERR_INVALID_ARGUMENT);
  CHECK(check_pointer(h.data(), 0, "t").status == HVD_ERR_INVALID_ARGUMENT);
  CHECK(check_pointer(h.data(), HVD_DEVICE_CPU, "t").ok());
  CHECK(check_pointer(managed, 0, "t").ok());
  CHECK(check_pointer(managed, HVD_DEVICE_CPU, "t").ok());
  if (cuda_device_count(nullptr) == 1)
    CHECK(check_pointer(d, 1, "t").status == HVD_ERR_INVALID_ARGUMENT);
  cudaFree(d);
  cudaFreeHost(pinned);
  cudaFree(managed);
}

}  // namespace

int main() {
  require_device("gpu-copy-kernel");
  std::unique_ptr<DeviceContext> ctx;
  CHECK_OK(DeviceContext::create(0, &ctx));
  BatchedCopier copier(ctx->stream());
  for (hvd_dtype_t dtype : kAllDtypes) {
    check_dtype(*ctx, copier, dtype, 8, 1.0, 1);     // plain, inline descriptors
    check_dtype(*ctx, copier, dtype, 5, 0.5, 1);     // prescale
    check_dtype(*ctx, copier, dtype, 6, 1.0, 3);     // average over 3 ranks
    check_dtype(*ctx, copier, dtype, 100, 2.0, 4);   // descriptors uploaded
    // A factor no half holds exactly (Horovod's prescale and postscale tests draw one).
    if (dtype == HVD_FLOAT16) check_dtype(*ctx, copier, dtype, 7, 0.3712, 1);
  }
  stream_ordering(*ctx, copier);
  copy_timing(*ctx, copier);
  pointer_checks();
  std::printf("gpu-copy-kernel: ok\n");
  return 0;
}
