// CUDA pack_head_rows: each active (token, head) pair, in token order, gets the key of its group
// g = head * batch + b; the stable radix sort of index_groups.h orders the pairs by key (tokens stay
// ascending inside a group) and gives the group starts, which are row_offsets; one more kernel writes
// the rows. Everything stays on the device. first_bad_selection: one thread per token, the smallest bad
// token by atomicMin, read back as the one host value the check needs.
#include "core/kernels/head_rows.h"

#include <algorithm>

#include "core/cuda/index_groups.h"
#include "core/cuda/launch.cuh"

namespace moh::cuda {
namespace {

constexpr unsigned long long kNone = ~0ull;

__global__ void first_bad_selection_kernel(const int64_t* sel, int64_t n, int64_t k, int64_t routed,
                                           unsigned long long* first) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t* row = sel + i * k;
    bool bad = false;
    for (int64_t j = 0; j < k && !bad; ++j) {
      bad = row[j] < 0 || row[j] >= routed;
      for (int64_t m = 0; m < j && !bad; ++m) bad = row[m] == row[j];
    }
    if (bad) atomicMin(first, static_cast<unsigned long long>(i));
  }
}

// The head of pair p = token * (shared + k) + slot: slot < shared names a shared head, else a selected one.
__device__ __forceinline__ int64_t pair_head(const int64_t* sel, int64_t p, int64_t shared, int64_t k) {
  const int64_t token = p / (shared + k), slot = p - token * (shared + k);
  return slot < shared ? slot : shared + sel[token * k + slot - shared];
}

__global__ void group_keys_kernel(const int64_t* sel, int64_t rows, int64_t shared, int64_t k, int64_t batch,
                                  int64_t tokens, int64_t* keys) {
  for (int64_t p = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; p < rows; p += int64_t(gridDim.x) * blockDim.x)
    keys[p] = pair_head(sel, p, shared, k) * batch + (p / (shared + k)) / tokens;
}

// Row r holds pair order[r]; head_offsets[h] = row_offsets[h * batch].
__global__ void place_rows_kernel(const int64_t* sel, const int64_t* order, int64_t rows, int64_t shared, int64_t k,
                                  int64_t heads, int64_t batch, int64_t tokens, int64_t first_position,
                                  int64_t* token_index, int64_t* q_pos, int64_t* pair_index,
                                  const int64_t* row_offsets, int64_t* head_offsets) {
  for (int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < rows; r += int64_t(gridDim.x) * blockDim.x) {
    const int64_t p = order[r], token = p / (shared + k);
    token_index[r] = token;
    q_pos[r] = first_position + token % tokens;
    pair_index[r] = token * heads + pair_head(sel, p, shared, k);
  }
  for (int64_t h = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; h <= heads; h += int64_t(gridDim.x) * blockDim.x)
    head_offsets[h] = row_offsets[h * batch];
}

}  // namespace

int64_t first_bad_selection(const Tensor& topk, int64_t routed) {
  const int64_t n = topk.size(0), k = topk.size(1);
  if (n == 0 || k == 0) return -1;
  DeviceGuard guard(topk.device().index);
  cudaStream_t stream = stream_for(topk);
  Tensor flag = Tensor::empty({1}, DType::Int64, topk.device());
  MOH_CUDA_CHECK(cudaMemsetAsync(flag.raw_data(), 0xff, sizeof(int64_t), stream));  // kNone
  first_bad_selection_kernel<<<grid_for(n), kBlockThreads, 0, stream>>>(
      topk.data<int64_t>(), n, k, routed, static_cast<unsigned long long*>(flag.raw_data()));
  MOH_CUDA_CHECK_LAUNCH("first_bad_selection_kernel");
  unsigned long long first = 0;
  copy_device_to_host(&first, flag.raw_data(), sizeof first, topk.device().index);
  return first == kNone ? -1 : int64_t(first);
}

void pack_head_rows(const Tensor& token_index, const Tensor& q_pos, const Tensor& pair_index,
                    const Tensor& row_offsets, const Tensor& head_offsets, const Tensor& topk, int64_t batch,
                    int64_t shared, int64_t first_position) {
  const int64_t heads = head_offsets.numel() - 1, n = topk.size(0), k = topk.size(1), tokens = n / batch;
  const int64_t rows = token_index.numel();
  DeviceGuard guard(topk.device().index);
  cudaStream_t stream = stream_for(topk);
  Tensor keys = Tensor::empty({rows}, DType::Int64, topk.device());
  if (rows > 0) {
    group_keys_kernel<<<grid_for(rows), kBlockThreads, 0, stream>>>(topk.data<int64_t>(), rows, shared, k, batch,
                                                                    tokens, keys.data<int64_t>());
    MOH_CUDA_CHECK_LAUNCH("group_keys_kernel");
  }
  const IndexGroups groups = group_positions(keys, heads * batch);
  MOH_CUDA_CHECK(cudaMemcpyAsync(row_offsets.raw_data(), groups.start.raw_data(), row_offsets.nbytes(),
                                 cudaMemcpyDeviceToDevice, stream));
  place_rows_kernel<<<grid_for(std::max(rows, heads + 1)), kBlockThreads, 0, stream>>>(
      topk.data<int64_t>(), groups.order.data<int64_t>(), rows, shared, k, heads, batch, tokens, first_position,
      token_index.data<int64_t>(), q_pos.data<int64_t>(), pair_index.data<int64_t>(), groups.start.data<int64_t>(),
      head_offsets.data<int64_t>());
  MOH_CUDA_CHECK_LAUNCH("place_rows_kernel");
}

}  // namespace moh::cuda
