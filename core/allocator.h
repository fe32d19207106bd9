// Allocator: the memory interface behind every Storage. Each device has one process-wide
// allocator that reports current, peak and reserved bytes. CPU blocks are 64-byte aligned.
// The CUDA caching allocator (core/cuda/) implements the same interface.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/device.h"

namespace moh {

struct AllocatorStats {
  int64_t current_bytes = 0;   // bytes handed out and not yet returned
  int64_t peak_bytes = 0;      // max of current_bytes since start or reset_peak()
  int64_t reserved_bytes = 0;  // bytes held from the system (>= current for caching allocators)
  int64_t num_allocs = 0;      // allocate() calls since start
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t nbytes) = 0;
  virtual void deallocate(void* ptr, size_t nbytes) = 0;
  virtual AllocatorStats stats() const = 0;
  virtual void reset_peak() = 0;
  virtual Device device() const = 0;
  // Returns cached, unused blocks to the system (caching allocators; the CPU one keeps none).
  virtual void empty_cache() {}
};

inline constexpr size_t kCpuAlignment = 64;

Allocator& cpu_allocator();
// The caching allocator of CUDA device `index` (core/cuda/caching_allocator.cpp); throws in a
// CPU-only build or when the machine has no such device.
Allocator& cuda_allocator(int index);
// The allocator for `device`; throws when the build or the machine has no such device.
Allocator& allocator_for(Device device);

}  // namespace moh
