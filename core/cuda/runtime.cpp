// CUDA runtime layer (core/cuda/runtime.h): checked calls, per-device streams, device discovery
// and byte copies. A machine without a driver or GPU reports zero devices instead of failing.
#include "core/cuda/runtime.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace moh {

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver"/"no device" error
    return 0;
  }
  return count;
}

}  // namespace moh

namespace moh::cuda {
namespace {

constexpr int kMaxDevices = 64;

struct DeviceStreams {
  std::once_flag once;
  cudaStream_t compute = nullptr;
  cudaStream_t comm = nullptr;
};

DeviceStreams& streams_of(int device) {
  static std::array<DeviceStreams, kMaxDevices> all;
  static const int count = cuda_device_count();
  MOH_CHECK(device >= 0 && device < kMaxDevices && device < count, "cuda:", device,
            " does not exist (this machine has ", count, " CUDA devices)");
  DeviceStreams& s = all[size_t(device)];
  std::call_once(s.once, [&] {
    DeviceGuard guard(device);
    MOH_CUDA_CHECK(cudaStreamCreateWithFlags(&s.compute, cudaStreamNonBlocking));
    MOH_CUDA_CHECK(cudaStreamCreateWithFlags(&s.comm, cudaStreamNonBlocking));
  });
  return s;
}

}  // namespace

void fail_cuda(cudaError_t rc, const char* call, const char* file, int line) {
  cudaGetLastError();  // a non-sticky error must not resurface at the next unrelated check
  MOH_FAIL("CUDA error ", cudaGetErrorName(rc), " (", cudaGetErrorString(rc), ") in ", call, " at ", file, ":", line);
}

void fail_cublas(cublasStatus_t rc, const char* call, const char* file, int line) {
  MOH_FAIL("cuBLAS error ", cublasGetStatusName(rc), " (", cublasGetStatusString(rc), ") in ", call, " at ", file, ":",
           line);
}

bool sync_after_launch() {
#if defined(NDEBUG)
  static const bool on = [] {
    const char* v = std::getenv("MOH_CUDA_SYNC");
    return v && std::strcmp(v, "1") == 0;
  }();
  return on;
#else
  return true;
#endif
}

void check_launch(const char* kernel, const char* file, int line) {
  cudaError_t rc = cudaGetLastError();
  if (rc == cudaSuccess && sync_after_launch()) rc = cudaStreamSynchronize(compute_stream(current_device()));
  if (rc != cudaSuccess) fail_cuda(rc, kernel, file, line);
}

cudaStream_t compute_stream(int device) { return streams_of(device).compute; }
cudaStream_t comm_stream(int device) { return streams_of(device).comm; }

void stream_wait(cudaStream_t waiter, cudaStream_t producer) {
  cudaEvent_t event = nullptr;
  MOH_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  MOH_CUDA_CHECK(cudaEventRecord(event, producer));
  MOH_CUDA_CHECK(cudaStreamWaitEvent(waiter, event, 0));
  MOH_CUDA_CHECK(cudaEventDestroy(event));  // released once the wait has been satisfied
}

void synchronize(int device) { MOH_CUDA_CHECK(cudaStreamSynchronize(compute_stream(device))); }

int current_device() {
  int device = 0;
  MOH_CUDA_CHECK(cudaGetDevice(&device));
  return device;
}

DeviceGuard::DeviceGuard(int device) {
  MOH_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) MOH_CUDA_CHECK(cudaSetDevice(device));
}

DeviceGuard::~DeviceGuard() {
  int now = -1;
  if (cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
}

void copy_host_to_device(void* dst, const void* src, size_t nbytes, int device) {
  if (nbytes == 0) return;
  DeviceGuard guard(device);
  cudaStream_t stream = compute_stream(device);
  // Pinned staging: the copy is asynchronous for the device, and the caller's buffer is free to
  // reuse on return. One staging buffer per device, grown on demand, reused after the stream
  // has consumed it.
  struct Staging {
    std::mutex mutex;
    void* host = nullptr;
    size_t bytes = 0;
    cudaEvent_t consumed = nullptr;
  };
  static std::array<Staging, kMaxDevices> staging;
  Staging& s = staging[size_t(device)];
  std::lock_guard lock(s.mutex);
  if (!s.consumed) MOH_CUDA_CHECK(cudaEventCreateWithFlags(&s.consumed, cudaEventDisableTiming));
  MOH_CUDA_CHECK(cudaEventSynchronize(s.consumed));  // the previous copy out of the buffer is done
  if (s.bytes < nbytes) {
    if (s.host) MOH_CUDA_CHECK(cudaFreeHost(s.host));
    s.host = nullptr;
    s.bytes = 0;
    MOH_CUDA_CHECK(cudaMallocHost(&s.host, nbytes));
    s.bytes = nbytes;
  }
  std::memcpy(s.host, src, nbytes);
  MOH_CUDA_CHECK(cudaMemcpyAsync(dst, s.host, nbytes, cudaMemcpyHostToDevice, stream));
  MOH_CUDA_CHECK(cudaEventRecord(s.consumed, stream));
}

void copy_device_to_host(void* dst, const void* src, size_t nbytes, int device) {
  if (nbytes == 0) return;
  DeviceGuard guard(device);
  cudaStream_t stream = compute_stream(device);
  MOH_CUDA_CHECK(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, stream));
  MOH_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void copy_device_to_device(void* dst, int dst_device, const void* src, int src_device, size_t nbytes) {
  if (nbytes == 0) return;
  DeviceGuard guard(dst_device);
  if (dst_device != src_device) stream_wait(compute_stream(dst_device), compute_stream(src_device));
  MOH_CUDA_CHECK(cudaMemcpyPeerAsync(dst, dst_device, src, src_device, nbytes, compute_stream(dst_device)));
  if (dst_device != src_device) stream_wait(compute_stream(src_device), compute_stream(dst_device));
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t nbytes) {
  if (dst_device.is_cuda() && src_device.is_cuda())
    copy_device_to_device(dst, dst_device.index, src, src_device.index, nbytes);
  else if (dst_device.is_cuda())
    copy_host_to_device(dst, src, nbytes, dst_device.index);
  else if (src_device.is_cuda())
    copy_device_to_host(dst, src, nbytes, src_device.index);
  else if (nbytes > 0)
    std::memcpy(dst, src, nbytes);
}

}  // namespace moh::cuda
