// Index range checks, gather/scatter along a dim (index_select and index_add are a gather/scatter
// with an expanded index), top-k along the last dim and one_hot on CUDA.
// Scatter is race-free without atomics and applies duplicates in the CPU's order: each thread owns
// one output line and walks the index along `dim` in order; an index shared by every line (as
// index_add expands it) longer than kLineScanMax is instead grouped by value (index_groups.h) and
// each output element is owned by one thread that applies its positions in ascending order. Both
// paths perform the CPU's operations in the CPU's order, so results match it bit for bit.
// topk gives each row to one warp, which selects the k entries one by one in rank order.
#include "core/kernels/indexing.h"

#include <type_traits>

#include "core/cuda/dispatch.cuh"
#include "core/cuda/index_groups.h"
#include "core/cuda/launch.cuh"

namespace moh::cuda {
namespace {

constexpr int64_t kLineScanMax = 16;  // shared indices longer than this scatter through index groups
constexpr int kWarp = 32;

__device__ __forceinline__ int64_t thread_id() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t thread_count() { return int64_t(gridDim.x) * blockDim.x; }

// t narrowed to `shape` in every dim but `dim`, where only its first element is kept and broadcast
// (stride 0): index value v at a position of `shape` selects the element v * t.stride(dim) past it.
Tensor line_base(const Tensor& t, int64_t dim, const Shape& shape) {
  Tensor v = t;
  for (int64_t e = 0; e < t.dim(); ++e) v = v.narrow(e, 0, e == dim ? 1 : shape[size_t(e)]);
  return v.expand(shape);
}

// ------------------------------------------------------------------------------- range check

// first_bad = min over threads of the first out-of-range flat position each one sees (its
// positions ascend, so it stops there); an integer min, so thread order cannot change the result.
__global__ void first_bad_index_kernel(const int64_t* index, StridedOffsets<1> at, int64_t n, int64_t limit,
                                       unsigned long long* first_bad) {
  for (int64_t i = thread_id(); i < n; i += thread_count()) {
    int64_t o[1];
    at.offsets(i, o);
    const int64_t v = index[o[0]];
    if (v < 0 || v >= limit) {
      atomicMin(first_bad, static_cast<unsigned long long>(i));
      return;
    }
  }
}

// ------------------------------------------------------------------------------ gather/scatter

template <class T, bool kAccumulate>
__device__ __forceinline__ void apply(T& o, T v) {
  if constexpr (!kAccumulate) {
    o = v;
  } else if constexpr (is_half_v<T>) {
    o = T(float(o) + float(v));
  } else {
    o += v;
  }
}

// at: {out, x line base, index} over index's shape.
template <class T>
__global__ void gather_kernel(T* out, const T* x, const int64_t* index, StridedOffsets<3> at, int64_t n,
                              int64_t x_dim_stride) {
  for (int64_t i = thread_id(); i < n; i += thread_count()) {
    int64_t o[3];
    at.offsets(i, o);
    out[o[0]] = x[o[1] + index[o[2]] * x_dim_stride];
  }
}

// One thread per line (a position of index with `dim` collapsed), walking the line in order.
// at: {out line base, index line, src line} over the lines' shape; the *_d are strides along dim.
template <class T, bool kAccumulate>
__global__ void scatter_lines_kernel(T* out, const int64_t* index, const T* src, StridedOffsets<3> at,
                                     int64_t lines, int64_t len, int64_t out_d, int64_t index_d, int64_t src_d) {
  for (int64_t line = thread_id(); line < lines; line += thread_count()) {
    int64_t o[3];
    at.offsets(line, o);
    for (int64_t j = 0; j < len; ++j)
      apply<T, kAccumulate>(out[o[0] + index[o[1] + j * index_d] * out_d], src[o[2] + j * src_d]);
  }
}

// One thread per output element (value v along dim, line); its positions are
// order[start[v] .. start[v + 1]), ascending (only the last one when overwriting).
// at: {out line base, src line base} over the lines' shape.
template <class T, bool kAccumulate>
__global__ void scatter_groups_kernel(T* out, const T* src, StridedOffsets<2> at, int64_t lines, int64_t rows,
                                      const int64_t* order, const int64_t* start, int64_t out_d, int64_t src_d) {
  for (int64_t i = thread_id(); i < lines * rows; i += thread_count()) {
    const int64_t v = i / lines, line = i - v * lines;
    const int64_t last = start[v + 1];
    int64_t k = kAccumulate ? start[v] : (start[v] < last ? last - 1 : last);
    if (k == last) continue;
    int64_t o[2];
    at.offsets(line, o);
    T acc = out[o[0] + v * out_d];
    for (; k < last; ++k) apply<T, kAccumulate>(acc, src[o[1] + order[k] * src_d]);
    out[o[0] + v * out_d] = acc;
  }
}

// ------------------------------------------------------------------------------------- topk

template <class T>
using rank_t = std::conditional_t<is_half_v<T>, float, T>;  // 16-bit floats rank as float

template <class K>
__device__ __forceinline__ bool is_nan(K v) {
  if constexpr (std::is_floating_point_v<K>) {
    return isnan(v);
  } else {
    return false;
  }
}

// The CPU's ranking made a strict total order: (a, ia) comes before (b, ib) when a ranks before b
// (largest: bigger first; smallest: smaller first; NaN counts as the largest value), or when
// neither ranks before the other and ia < ib.
template <class K>
__device__ __forceinline__ bool before(K a, int64_t ia, K b, int64_t ib, bool largest) {
  const bool an = is_nan(a), bn = is_nan(b);
  const bool ab = largest ? (an && !bn) || a > b : (!an && bn) || a < b;
  const bool ba = largest ? (bn && !an) || b > a : (!bn && an) || b < a;
  return ab || (!ba && ia < ib);
}

// One warp per row: round j picks the first entry (in the total order) after round j-1's pick, each
// lane scanning a strided share of the row and the warp reducing by shuffles. rows_at addresses
// row starts; x_last is the stride along the row.
template <class T>
__global__ void topk_kernel(T* values, int64_t* indices, const T* x, StridedOffsets<1> rows_at, int64_t rows,
                            int64_t len, int64_t x_last, int64_t k, bool largest) {
  using K = rank_t<T>;
  const int lane = int(threadIdx.x) % kWarp;
  for (int64_t r = thread_id() / kWarp; r < rows; r += thread_count() / kWarp) {
    int64_t o[1];
    rows_at.offsets(r, o);
    const T* row = x + o[0];
    K prev{};
    int64_t prev_i = -1;
    for (int64_t j = 0; j < k; ++j) {
      K best{};
      int64_t best_i = -1;
      for (int64_t e = lane; e < len; e += kWarp) {
        const K v = K(row[e * x_last]);
        if (prev_i >= 0 && !before(prev, prev_i, v, e, largest)) continue;
        if (best_i < 0 || before(v, e, best, best_i, largest)) {
          best = v;
          best_i = e;
        }
      }
      for (int step = kWarp / 2; step > 0; step /= 2) {
        const K v = __shfl_down_sync(0xffffffffu, best, step);
        const int64_t i = __shfl_down_sync(0xffffffffu, best_i, step);
        if (i >= 0 && (best_i < 0 || before(v, i, best, best_i, largest))) {
          best = v;
          best_i = i;
        }
      }
      prev = __shfl_sync(0xffffffffu, best, 0);
      prev_i = __shfl_sync(0xffffffffu, best_i, 0);
      if (lane == 0) {
        values[r * k + j] = T(prev);
        indices[r * k + j] = prev_i;
      }
    }
  }
}

// Counts each value's occurrences in seen; a position whose value was already counted lowers
// first_repeat (which of two equal values is seen second depends on timing; the value does not).
__global__ void first_repeat_kernel(const int64_t* index, int64_t n, int* seen, unsigned long long* first_repeat) {
  for (int64_t i = thread_id(); i < n; i += thread_count())
    if (atomicAdd(&seen[index[i]], 1) > 0) atomicMin(first_repeat, static_cast<unsigned long long>(i));
}

// ---------------------------------------------------------------------------------- one_hot

template <class T>
__global__ void one_hot_kernel(T* out, const int64_t* indices, StridedOffsets<1> at, int64_t n, int64_t classes) {
  for (int64_t i = thread_id(); i < n; i += thread_count()) {
    int64_t o[1];
    at.offsets(i, o);
    out[i * classes + indices[o[0]]] = T(1.0f);
  }
}

}  // namespace

void check_distinct_index(const Tensor& index, int64_t limit, const char* op, const char* name) {
  const int64_t n = index.numel();
  if (n < 2) return;
  const int device = index.device().index;
  DeviceGuard guard(device);
  cudaStream_t stream = stream_for(index);
  Tensor seen = Tensor::empty({limit}, DType::Int32, index.device());
  Tensor flag = Tensor::empty({1}, DType::Int64, index.device());
  MOH_CUDA_CHECK(cudaMemsetAsync(seen.raw_data(), 0, size_t(limit) * sizeof(int), stream));
  MOH_CUDA_CHECK(cudaMemsetAsync(flag.raw_data(), 0xff, sizeof(int64_t), stream));  // "none": the max
  first_repeat_kernel<<<grid_for(n), kBlockThreads, 0, stream>>>(index.data<int64_t>(), n, seen.data<int32_t>(),
                                                                 static_cast<unsigned long long*>(flag.raw_data()));
  MOH_CUDA_CHECK_LAUNCH("first_repeat_kernel");
  unsigned long long first = 0;
  copy_device_to_host(&first, flag.raw_data(), sizeof first, device);
  if (first == ~0ull) return;
  int64_t value = 0;
  copy_device_to_host(&value, index.data<int64_t>() + first, sizeof value, device);
  MOH_FAIL(op, ": ", name, " holds ", value, " more than once: its values must be distinct");
}

void check_index_range(const Tensor& index, int64_t limit, const char* op, const char* name,
                       const std::string& what) {
  const int64_t n = index.numel();
  if (n == 0) return;
  const int device = index.device().index;
  DeviceGuard guard(device);
  cudaStream_t stream = stream_for(index);
  Tensor flag = Tensor::empty({1}, DType::Int64, index.device());
  MOH_CUDA_CHECK(cudaMemsetAsync(flag.raw_data(), 0xff, sizeof(int64_t), stream));  // "none": the max
  first_bad_index_kernel<<<grid_for(n), kBlockThreads, 0, stream>>>(
      index.data<int64_t>(), strided_offsets<1>(index.shape(), {&index}), n, limit,
      static_cast<unsigned long long*>(flag.raw_data()));
  MOH_CUDA_CHECK_LAUNCH("first_bad_index_kernel");
  unsigned long long first_bad = 0;
  copy_device_to_host(&first_bad, flag.raw_data(), sizeof first_bad, device);
  if (first_bad == ~0ull) return;
  std::string pos;
  int64_t offset = 0;
  for (int64_t d = index.dim() - 1, rem = int64_t(first_bad); d >= 0; --d) {
    const int64_t c = rem % index.size(d);
    pos = std::to_string(c) + (pos.empty() ? "" : ", ") + pos;
    offset += c * index.stride(d);
    rem /= index.size(d);
  }
  int64_t value = 0;
  copy_device_to_host(&value, index.data<int64_t>() + offset, sizeof value, device);
  MOH_FAIL(op, ": ", name, index.dim() == 0 ? "" : "[" + pos + "]", " = ", value, " is out of range [0, ", limit,
           ") for ", what);
}

void gather(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  const int64_t n = index.numel();
  if (n == 0) return;
  DeviceGuard guard(x.device().index);
  const Tensor x_base = line_base(x, dim, index.shape());
  const StridedOffsets<3> at = strided_offsets<3>(index.shape(), {&out, &x_base, &index});
  dispatch_all(x.dtype(), "gather", [&]<class T>() {
    gather_kernel<T><<<grid_for(n), kBlockThreads, 0, stream_for(x)>>>(
        static_cast<T*>(out.raw_data()), static_cast<const T*>(x_base.raw_data()), index.data<int64_t>(), at, n,
        x.stride(dim));
    MOH_CUDA_CHECK_LAUNCH("gather_kernel");
  });
}

void scatter(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, bool accumulate) {
  if (index.numel() == 0) return;
  DeviceGuard guard(out.device().index);
  cudaStream_t stream = stream_for(out);
  Shape line_shape = index.shape();
  const int64_t len = line_shape[size_t(dim)];
  line_shape[size_t(dim)] = 1;
  const int64_t lines = shape_numel(line_shape);
  const Tensor out_base = line_base(out, dim, line_shape), src_base = line_base(src, dim, line_shape);
  bool shared = true;  // the same index line at every line position (index_add's expanded index)
  for (int64_t e = 0; e < index.dim(); ++e) shared = shared && (e == dim || index.size(e) == 1 || index.stride(e) == 0);
  auto run = [&]<class T, bool kAccumulate>() {
    T* po = static_cast<T*>(out_base.raw_data());
    const T* ps = static_cast<const T*>(src_base.raw_data());
    if (shared && len > kLineScanMax) {
      Tensor line = index;
      for (int64_t e = index.dim() - 1; e >= 0; --e)
        if (e != dim) line = line.select(e, 0);
      const int64_t rows = out.size(dim);
      const IndexGroups groups = group_positions(line, rows);
      scatter_groups_kernel<T, kAccumulate><<<grid_for(lines * rows), kBlockThreads, 0, stream>>>(
          po, ps, strided_offsets<2>(line_shape, {&out_base, &src_base}), lines, rows,
          groups.order.data<int64_t>(), groups.start.data<int64_t>(), out.stride(dim), src.stride(dim));
      MOH_CUDA_CHECK_LAUNCH("scatter_groups_kernel");
      return;
    }
    const Tensor index_base = line_base(index, dim, line_shape);
    scatter_lines_kernel<T, kAccumulate><<<grid_for(lines), kBlockThreads, 0, stream>>>(
        po, index.data<int64_t>(), ps, strided_offsets<3>(line_shape, {&out_base, &index_base, &src_base}), lines,
        len, out.stride(dim), index.stride(dim), src.stride(dim));
    MOH_CUDA_CHECK_LAUNCH("scatter_lines_kernel");
  };
  if (accumulate) {
    dispatch_math_numeric(out.dtype(), "scatter_add", [&]<class T>() { run.template operator()<T, true>(); });
  } else {
    dispatch_all(out.dtype(), "scatter", [&]<class T>() { run.template operator()<T, false>(); });
  }
}

void topk(const Tensor& values, const Tensor& indices, const Tensor& x, int64_t k, bool largest) {
  if (values.numel() == 0) return;
  const int64_t len = x.size(-1), rows = x.numel() / len;
  DeviceGuard guard(x.device().index);
  const Tensor row_starts = x.narrow(-1, 0, 1);
  const StridedOffsets<1> rows_at = strided_offsets<1>(row_starts.shape(), {&row_starts});
  constexpr int kWarpsPerBlock = kBlockThreads / kWarp;
  dispatch_math_numeric(x.dtype(), "topk", [&]<class T>() {
    topk_kernel<T><<<grid_for(rows, kWarpsPerBlock), kBlockThreads, 0, stream_for(x)>>>(
        values.data<T>(), indices.data<int64_t>(), x.data<T>(), rows_at, rows, len, x.stride(-1), k, largest);
    MOH_CUDA_CHECK_LAUNCH("topk_kernel");
  });
}

void one_hot(const Tensor& out, const Tensor& indices) {
  if (out.numel() == 0) return;
  DeviceGuard guard(out.device().index);
  cudaStream_t stream = stream_for(out);
  MOH_CUDA_CHECK(cudaMemsetAsync(out.raw_data(), 0, out.nbytes(), stream));  // all-zero bits are 0 in every dtype
  const int64_t n = indices.numel();
  dispatch_all(out.dtype(), "one_hot", [&]<class T>() {
    one_hot_kernel<T><<<grid_for(n), kBlockThreads, 0, stream>>>(
        out.data<T>(), indices.data<int64_t>(), strided_offsets<1>(indices.shape(), {&indices}), n, out.size(-1));
    MOH_CUDA_CHECK_LAUNCH("one_hot_kernel");
  });
}

}  // namespace moh::cuda
