// group_positions: keys and positions are loaded into contiguous buffers, sorted as pairs by
// CUB's stable radix sort over only the bits a value in [0, rows) can use, and each value's first
// sorted slot is found by a binary search (one thread per value, so empty groups get their start too).
#include "core/cuda/index_groups.h"

#include <cub/device/device_radix_sort.cuh>

#include <algorithm>
#include <bit>

#include "core/cuda/launch.cuh"

namespace moh::cuda {
namespace {

__global__ void load_keys_kernel(const int64_t* index, int64_t stride, int64_t n, int64_t* keys,
                                 int64_t* positions) {
  for (int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < n; p += int64_t(gridDim.x) * blockDim.x) {
    keys[p] = index[p * stride];
    positions[p] = p;
  }
}

// start[v] = the first slot of the sorted keys holding a value >= v, for v in [0, rows].
__global__ void group_starts_kernel(const int64_t* sorted_keys, int64_t n, int64_t rows, int64_t* start) {
  for (int64_t v = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; v <= rows;
       v += int64_t(gridDim.x) * blockDim.x) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (sorted_keys[mid] < v) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    start[v] = lo;
  }
}

}  // namespace

IndexGroups group_positions(const Tensor& index, int64_t rows) {
  MOH_CHECK(index.dim() == 1 && index.dtype() == DType::Int64, "group_positions: expected a 1-D int64 index, got ",
            describe(index));
  const Device device = index.device();
  const int64_t n = index.numel();
  DeviceGuard guard(device.index);
  cudaStream_t stream = stream_for(index);
  IndexGroups groups{Tensor::empty({n}, DType::Int64, device), Tensor::empty({rows + 1}, DType::Int64, device)};
  Tensor sorted_keys = Tensor::empty({n}, DType::Int64, device);
  if (n > 0) {
    Tensor keys = Tensor::empty({n}, DType::Int64, device), positions = Tensor::empty({n}, DType::Int64, device);
    load_keys_kernel<<<grid_for(n), kBlockThreads, 0, stream>>>(index.data<int64_t>(), index.stride(0), n,
                                                                keys.data<int64_t>(), positions.data<int64_t>());
    MOH_CUDA_CHECK_LAUNCH("load_keys_kernel");
    // Values are in [0, rows) with rows >= 1 here, so only the low bit_width(rows - 1) bits differ.
    const int end_bit = std::max(1, int(std::bit_width(uint64_t(rows - 1))));
    size_t temp_bytes = 0;
    MOH_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, keys.data<int64_t>(),
                                                   sorted_keys.data<int64_t>(), positions.data<int64_t>(),
                                                   groups.order.data<int64_t>(), n, 0, end_bit, stream));
    Tensor temp = Tensor::empty({int64_t(temp_bytes)}, DType::UInt8, device);
    MOH_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.raw_data(), temp_bytes, keys.data<int64_t>(),
                                                   sorted_keys.data<int64_t>(), positions.data<int64_t>(),
                                                   groups.order.data<int64_t>(), n, 0, end_bit, stream));
  }
  group_starts_kernel<<<grid_for(rows + 1), kBlockThreads, 0, stream>>>(sorted_keys.data<int64_t>(), n, rows,
                                                                         groups.start.data<int64_t>());
  MOH_CUDA_CHECK_LAUNCH("group_starts_kernel");
  return groups;
}

}  // namespace moh::cuda
