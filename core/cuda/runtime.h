// The CUDA runtime layer every kernel file builds on: checked calls, the per-device compute and
// communication streams, the current-device guard, and host<->device copies.
// Invariants: every op launches on compute_stream(device) of its tensors' device, so work is
// ordered by that one stream and the caching allocator may hand a freed block to the next op at
// once; collectives run on comm_stream(device) and are ordered against compute with events.
// Host reads of device memory (Tensor::to(cpu), item) synchronise the compute stream.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "core/device.h"
#include "core/error.h"

namespace moh::cuda {

// Raise moh::Error with the call, file, line and the library's own message.
[[noreturn]] void fail_cuda(cudaError_t rc, const char* call, const char* file, int line);
[[noreturn]] void fail_cublas(cublasStatus_t rc, const char* call, const char* file, int line);

// After a kernel launch: cudaGetLastError always (it is cheap and catches bad launch shapes);
// in builds without NDEBUG, or when MOH_CUDA_SYNC=1 is set, also synchronise the stream so a fault
// is reported at the kernel that caused it.
void check_launch(const char* kernel, const char* file, int line);
bool sync_after_launch();

// The device's compute stream (created on first use, non-blocking, lives for the process).
cudaStream_t compute_stream(int device);
// The device's communication stream (data-parallel collectives).
cudaStream_t comm_stream(int device);
// Makes `waiter` wait for all work queued so far on `producer` (an event, no host block); the two
// streams may belong to different devices.
void stream_wait(cudaStream_t waiter, cudaStream_t producer);
void synchronize(int device);  // waits for the device's compute stream

int current_device();

// Sets the current device for the scope and restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// Byte copies ordered on the compute stream of the device involved. device_to_host waits for
// the copy (the host reads the bytes next); host_to_device stages through a small ring of pinned
// buffers (8 MiB chunks) so the caller's pageable memory may be reused as soon as it returns,
// without waiting for the device.
void copy_host_to_device(void* dst, const void* src, size_t nbytes, int device);
void copy_device_to_host(void* dst, const void* src, size_t nbytes, int device);
void copy_device_to_device(void* dst, int dst_device, const void* src, int src_device, size_t nbytes);
// Whichever of the three the devices call for (CPU to CPU is a memcpy).
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes);

}  // namespace moh::cuda

#define MOH_CUDA_CHECK(call)                                                          \
  do {                                                                                \
    const cudaError_t moh_rc_ = (call);                                               \
    if (moh_rc_ != cudaSuccess) ::moh::cuda::fail_cuda(moh_rc_, #call, __FILE__, __LINE__); \
  } while (0)

#define MOH_CUBLAS_CHECK(call)                                                                 \
  do {                                                                                         \
    const cublasStatus_t moh_rc_ = (call);                                                     \
    if (moh_rc_ != CUBLAS_STATUS_SUCCESS) ::moh::cuda::fail_cublas(moh_rc_, #call, __FILE__, __LINE__); \
  } while (0)

// Use right after `kernel<<<...>>>(...)`.
#define MOH_CUDA_CHECK_LAUNCH(kernel) ::moh::cuda::check_launch(kernel, __FILE__, __LINE__)
