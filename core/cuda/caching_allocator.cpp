// The CUDA caching allocator: one per device, plain cudaMalloc underneath (never managed memory).
// Requests round up to a size class (512-byte steps below 1 MiB, 2 MiB steps above); a freed
// block goes to its device's free list and serves the next request of its class (or, for large
// blocks, a request up to 1/8 smaller), so a training step that allocates the same activation
// sizes every iteration stops calling cudaMalloc after the first one.
// Stream order: every block belongs to the device's compute stream (runtime.h). A block freed by
// the host while kernels that use it are still queued may be handed out at once, because the next
// user's kernels queue behind them on the same stream. Work on other streams (collectives) must
// be ordered against compute with stream_wait before its buffers are released.
// When cudaMalloc fails, the cache is emptied and the call retried once; the error then names
// the request, what is in use, what is cached and the device's free/total memory.
#include <cuda_runtime.h>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/allocator.h"
#include "core/cuda/runtime.h"

namespace moh {
namespace {

constexpr size_t kSmallLimit = size_t(1) << 20;
constexpr size_t kSmallStep = 512;
constexpr size_t kLargeStep = size_t(2) << 20;

size_t size_class(size_t nbytes) {
  const size_t n = nbytes == 0 ? 1 : nbytes;
  const size_t step = n < kSmallLimit ? kSmallStep : kLargeStep;
  return (n + step - 1) / step * step;
}

class CudaCachingAllocator final : public Allocator {
 public:
  explicit CudaCachingAllocator(int device) : device_(device) {}

  void* allocate(size_t nbytes) override {
    const size_t bytes = size_class(nbytes);
    std::lock_guard lock(mutex_);
    void* ptr = take_cached(bytes);
    if (!ptr) ptr = fresh_block(bytes, nbytes);
    stats_.current_bytes += int64_t(block_size_.at(ptr));
    stats_.peak_bytes = std::max(stats_.peak_bytes, stats_.current_bytes);
    ++stats_.num_allocs;
    return ptr;
  }

  void deallocate(void* ptr, size_t) override {
    std::lock_guard lock(mutex_);
    const size_t bytes = block_size_.at(ptr);
    stats_.current_bytes -= int64_t(bytes);
    free_blocks_.emplace(bytes, ptr);
  }

  AllocatorStats stats() const override {
    std::lock_guard lock(mutex_);
    return stats_;
  }

  void reset_peak() override {
    std::lock_guard lock(mutex_);
    stats_.peak_bytes = stats_.current_bytes;
  }

  Device device() const override { return Device::cuda(device_); }

  void empty_cache() override {
    std::lock_guard lock(mutex_);
    release_cached();
  }

 private:
  // The smallest cached block that fits: the exact class, or for large requests a block at most
  // 1/8 bigger (so one 2 GiB block cannot be pinned down by a 2 MiB tensor).
  void* take_cached(size_t bytes) {
    auto it = free_blocks_.lower_bound(bytes);
    if (it == free_blocks_.end()) return nullptr;
    const size_t slack = bytes < kSmallLimit ? 0 : bytes / 8;
    if (it->first > bytes + slack) return nullptr;
    void* ptr = it->second;
    free_blocks_.erase(it);
    return ptr;
  }

  void* fresh_block(size_t bytes, size_t requested) {
    cuda::DeviceGuard guard(device_);
    void* ptr = nullptr;
    cudaError_t rc = cudaMalloc(&ptr, bytes);
    if (rc == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      release_cached();
      rc = cudaMalloc(&ptr, bytes);
    }
    if (rc != cudaSuccess && rc != cudaErrorMemoryAllocation) {  // not memory: most often an earlier fault
      cudaGetLastError();
      MOH_FAIL("cuda:", device_, ": cudaMalloc of ", bytes, " bytes failed with ", cudaGetErrorName(rc), " (",
               cudaGetErrorString(rc), "); a sticky error comes from an earlier kernel: MOH_CUDA_SYNC=1 reports it "
               "at its launch");
    }
    if (rc != cudaSuccess) {
      cudaGetLastError();
      size_t free_bytes = 0, total_bytes = 0;
      cudaMemGetInfo(&free_bytes, &total_bytes);
      MOH_FAIL("cuda:", device_, " out of memory allocating ", requested, " bytes (", cudaGetErrorString(rc), "; ",
               stats_.current_bytes, " bytes in use by tensors, ", stats_.reserved_bytes, " reserved, device free ",
               free_bytes, " of ", total_bytes, ")");
    }
    block_size_[ptr] = bytes;
    stats_.reserved_bytes += int64_t(bytes);
    return ptr;
  }

  // Frees every cached block; the device is synchronised first so no queued kernel still uses one.
  void release_cached() {
    if (free_blocks_.empty()) return;
    cuda::DeviceGuard guard(device_);
    MOH_CUDA_CHECK(cudaDeviceSynchronize());
    for (auto& [bytes, ptr] : free_blocks_) {
      MOH_CUDA_CHECK(cudaFree(ptr));
      block_size_.erase(ptr);
      stats_.reserved_bytes -= int64_t(bytes);
    }
    free_blocks_.clear();
  }

  const int device_;
  mutable std::mutex mutex_;
  std::multimap<size_t, void*> free_blocks_;         // size class -> cached block
  std::unordered_map<void*, size_t> block_size_;    // every block held from the device
  AllocatorStats stats_;
};

}  // namespace

Allocator& cuda_allocator(int index) {
  constexpr int kMaxDevices = 64;
  static std::array<std::unique_ptr<CudaCachingAllocator>, kMaxDevices> allocators;
  static std::mutex mutex;
  static const int count = cuda_device_count();
  MOH_CHECK(index >= 0 && index < count, "cannot allocate on cuda:", index, ": this machine has ", count,
            " CUDA devices");
  std::lock_guard lock(mutex);
  auto& slot = allocators[size_t(index)];
  if (!slot) slot = std::make_unique<CudaCachingAllocator>(index);
  return *slot;
}

}  // namespace moh
