// CUDA runtime layer (core/cuda/runtime.h): checked calls, per-device streams, device discovery
// and byte copies. A machine without a driver or GPU reports zero devices instead of failing.
#include "core/cuda/runtime.h"

#include <algorithm>
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

void synchronize(Device device) {
  if (device.is_cuda()) cuda::synchronize(device.index);
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
  // The event is created on the producer's device (cudaEventRecord needs the stream's context);
  // cudaStreamWaitEvent accepts an event of another device.
  int producer_device = 0;
  MOH_CUDA_CHECK(cudaStreamGetDevice(producer, &producer_device));
  DeviceGuard guard(producer_device);
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

namespace {

// Pinned staging for host->device copies: a ring of kStagingSlots buffers of up to kStagingChunk
// bytes per device, each with an event marking when the stream has read it. A copy goes through
// in chunks, one slot each, so the host blocks only when it wraps around to a slot whose copy is
// still queued (behind the compute work before it), and at most kStagingSlots * kStagingChunk bytes
// stay pinned however large a tensor was copied.
constexpr int kStagingSlots = 4;
constexpr size_t kStagingChunk = size_t(8) << 20;

struct StagingSlot {
  void* host = nullptr;
  size_t bytes = 0;
  cudaEvent_t consumed = nullptr;
};

struct StagingRing {
  std::mutex mutex;
  std::array<StagingSlot, kStagingSlots> slots;
  int next = 0;
};

}  // namespace

void copy_host_to_device(void* dst, const void* src, size_t nbytes, int device) {
  if (nbytes == 0) return;
  DeviceGuard guard(device);
  cudaStream_t stream = compute_stream(device);
  static std::array<StagingRing, kMaxDevices> rings;
  StagingRing& ring = rings[size_t(device)];
  std::lock_guard lock(ring.mutex);
  for (size_t done = 0; done < nbytes;) {
    const size_t chunk = std::min(kStagingChunk, nbytes - done);
    StagingSlot& slot = ring.slots[size_t(ring.next)];
    ring.next = (ring.next + 1) % kStagingSlots;
    if (!slot.consumed) MOH_CUDA_CHECK(cudaEventCreateWithFlags(&slot.consumed, cudaEventDisableTiming));
    MOH_CUDA_CHECK(cudaEventSynchronize(slot.consumed));  // the slot's previous copy is done
    if (slot.bytes < chunk) {
      if (slot.host) MOH_CUDA_CHECK(cudaFreeHost(slot.host));
      slot.host = nullptr;
      slot.bytes = 0;
      const size_t size = std::min(kStagingChunk, std::max(chunk, size_t(64) << 10));  // small ones grow once
      MOH_CUDA_CHECK(cudaMallocHost(&slot.host, size));
      slot.bytes = size;
    }
    std::memcpy(slot.host, static_cast<const char*>(src) + done, chunk);
    MOH_CUDA_CHECK(
        cudaMemcpyAsync(static_cast<char*>(dst) + done, slot.host, chunk, cudaMemcpyHostToDevice, stream));
    MOH_CUDA_CHECK(cudaEventRecord(slot.consumed, stream));
    done += chunk;
  }
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
