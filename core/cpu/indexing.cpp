// Gather/scatter, top-k, one_hot and index range checks on the CPU.
// gather and scatter share one walk over the index positions (the indexed dim collapsed, so the
// strided-loop engine parallelises over the other dims): each position owns one line of the
// output, which keeps scatter race-free and its duplicate order fixed. Whole rows (index_select and
// index_add along dim 0 of row-contiguous tensors: MoH's query rows) move as rows instead, a memcpy or
// one vector add each, in the same index order; scatter's rows in parallel by bands of the output.
#include "core/kernels/indexing.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <omp.h>
#include <numeric>
#include <vector>

#include "core/cpu/strided_loop.h"
#include "core/dispatch.h"
#include "core/kernels/fill.h"

namespace moh::cpu {
namespace {

constexpr int64_t kInsertionTopK = 16;  // k up to this: one insertion scan; above: nth_element + sort

// Visits every position p of `index`: `at` is addressed at p (strides at_strides), `sel` at p with
// coordinate `dim` replaced by index[p] (strides sel_strides); body(at_element, sel_element).
template <class T, class Body>
void index_walk(const Tensor& index, int64_t dim, void* at, const std::vector<int64_t>& at_strides, void* sel,
                const std::vector<int64_t>& sel_strides, Body body) {
  Shape outer = index.shape();
  const int64_t len = outer[size_t(dim)];
  outer[size_t(dim)] = 1;
  StridedIter<3> it(outer, {at_strides, index.strides(), sel_strides});
  const int64_t esize = int64_t(sizeof(T));
  const int64_t at_d = at_strides[size_t(dim)] * esize,
                idx_d = index.strides()[size_t(dim)] * int64_t(sizeof(int64_t));
  const int64_t sel_d = sel_strides[size_t(dim)] * esize;
  std::array<char*, 3> base{static_cast<char*>(at), static_cast<char*>(index.raw_data()),
                            static_cast<char*>(sel)};
  for_each_run<3>(it, base, {esize, int64_t(sizeof(int64_t)), esize},
                  [&](std::array<char*, 3> p, std::array<int64_t, 3> s, int64_t n) {
                    auto one = [&](int64_t i, int64_t j) {
                      T& a = *reinterpret_cast<T*>(p[0] + i * s[0] + j * at_d);
                      const int64_t v = *reinterpret_cast<const int64_t*>(p[1] + i * s[1] + j * idx_d);
                      body(a, *reinterpret_cast<T*>(p[2] + i * s[2] + v * sel_d));
                    };
                    if (std::abs(at_d) < std::abs(s[0])) {  // walk `at` in memory order
                      for (int64_t i = 0; i < n; ++i)
                        for (int64_t j = 0; j < len; ++j) one(i, j);
                    } else {
                      for (int64_t j = 0; j < len; ++j)
                        for (int64_t i = 0; i < n; ++i) one(i, j);
                    }
                  });
}

// The element count of each row when every position of `index` along dim 0 moves one whole row: the index
// is expanded along the other dims (stride 0) and, in both tensors, those dims are one contiguous block per
// row (row-major strides; size-1 dims ignored). 0 otherwise (the element walk handles it).
int64_t whole_row_length(const Tensor& index, int64_t dim, const std::vector<int64_t>& at_strides,
                         const std::vector<int64_t>& sel_strides) {
  if (dim != 0 || index.dim() < 1 || index.numel() == 0) return 0;
  int64_t len = 1;
  for (int64_t d = index.dim() - 1; d >= 1; --d) {
    const int64_t size = index.size(d);
    if (size == 1) continue;
    if (index.stride(d) != 0 || at_strides[size_t(d)] != len || sel_strides[size_t(d)] != len) return 0;
    len *= size;
  }
  return len;
}

// Row r of `at` (row stride at_row) and row index[r] of `sel` (row stride sel_row, sel_rows rows):
// body(at_row_ptr, sel_row_ptr, len). Unordered walks split the rows r over the threads. Ordered walks
// (scatter, whose index may repeat a row) give each thread a band of sel's rows instead: every thread reads
// the whole index and takes the rows that land in its band, so each sel row sees its writes in index
// order, on any thread count, and only its owner touches it.
template <class T, class Body>
void row_walk(const Tensor& index, int64_t len, T* at, int64_t at_row, T* sel, int64_t sel_row, int64_t sel_rows,
              bool ordered, Body body) {
  const int64_t n = index.size(0), idx_stride = index.stride(0);
  const int64_t* idx = index.data<int64_t>();
  if (!ordered) {
#pragma omp parallel for schedule(static) if (n * len > kParallelGrain)
    for (int64_t r = 0; r < n; ++r) body(at + r * at_row, sel + idx[r * idx_stride] * sel_row, len);
    return;
  }
#pragma omp parallel if (n * len > kParallelGrain)
  {
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t lo = sel_rows * t / threads, hi = sel_rows * (t + 1) / threads;
    for (int64_t r = 0; r < n; ++r) {
      const int64_t s = idx[r * idx_stride];
      if (s >= lo && s < hi) body(at + r * at_row, sel + s * sel_row, len);
    }
  }
}

// True when a ranks strictly before b (largest: bigger first; smallest: smaller first); NaN
// counts as the largest value.
template <class T>
bool ranks_before(T a, T b, bool largest) {
  if constexpr (std::is_floating_point_v<T>) {
    if (largest) return (std::isnan(a) && !std::isnan(b)) || a > b;
    return (!std::isnan(a) && std::isnan(b)) || a < b;
  } else {
    return largest ? a > b : a < b;
  }
}

}  // namespace

void check_index_range(const Tensor& index, int64_t limit, const char* op, const char* name,
                       const std::string& what) {
  const int64_t n = index.numel();
  if (n == 0) return;
  Tensor idx = index.contiguous();
  const int64_t* p = idx.data<int64_t>();
  int64_t first_bad = n;
#pragma omp parallel for reduction(min : first_bad) schedule(static) if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i)
    if ((p[i] < 0 || p[i] >= limit) && i < first_bad) first_bad = i;
  if (first_bad == n) return;
  std::string pos;
  for (int64_t d = index.dim() - 1, rem = first_bad; d >= 0; --d) {
    pos = std::to_string(rem % index.shape()[size_t(d)]) + (pos.empty() ? "" : ", ") + pos;
    rem /= index.shape()[size_t(d)];
  }
  MOH_FAIL(op, ": ", name, index.dim() == 0 ? "" : "[" + pos + "]", " = ", p[first_bad],
           " is out of range [0, ", limit, ") for ", what);
}

void check_distinct_index(const Tensor& index, int64_t limit, const char* op, const char* name) {
  const int64_t* p = index.data<int64_t>();
  const int64_t n = index.numel();
  // One branch-free pass marks every value; only when some value came twice, a second pass finds the first.
  std::vector<uint8_t> seen(size_t(limit), 0);
  uint8_t repeated = 0;
  for (int64_t i = 0; i < n; ++i) {
    repeated |= seen[size_t(p[i])];
    seen[size_t(p[i])] = 1;
  }
  if (!repeated) return;
  std::fill(seen.begin(), seen.end(), uint8_t(0));
  for (int64_t i = 0; i < n; ++i) {
    MOH_CHECK(!seen[size_t(p[i])], op, ": ", name, " holds ", p[i], " more than once (again at position ", i,
              "): its values must be distinct");
    seen[size_t(p[i])] = 1;
  }
}

void gather(const Tensor& out, const Tensor& x, int64_t dim, const Tensor& index) {
  dispatch_all(x.dtype(), "gather", [&]<class T>() {
    if (const int64_t len = whole_row_length(index, dim, out.strides(), x.strides())) {
      row_walk<T>(index, len, out.data<T>(), out.stride(0), x.data<T>(), x.stride(0), x.size(0), false,
                  [](T* o, const T* v, int64_t n) { std::copy(v, v + n, o); });
      return;
    }
    index_walk<T>(index, dim, out.raw_data(), out.strides(), x.raw_data(), x.strides(),
                  [](T& o, const T& v) { o = v; });
  });
}

void scatter(const Tensor& out, int64_t dim, const Tensor& index, const Tensor& src, bool accumulate) {
  const int64_t len = whole_row_length(index, dim, src.strides(), out.strides());
  if (accumulate) {
    dispatch_numeric(out.dtype(), "scatter_add", [&]<class T>() {
      if (len) {
        row_walk<T>(index, len, src.data<T>(), src.stride(0), out.data<T>(), out.stride(0), out.size(0), true,
                    [](const T* v, T* o, int64_t n) {
#pragma omp simd
                      for (int64_t i = 0; i < n; ++i) o[i] += v[i];
                    });
        return;
      }
      index_walk<T>(index, dim, src.raw_data(), src.strides(), out.raw_data(), out.strides(),
                    [](const T& v, T& o) { o += v; });
    });
    return;
  }
  dispatch_all(out.dtype(), "scatter", [&]<class T>() {
    if (len) {
      row_walk<T>(index, len, src.data<T>(), src.stride(0), out.data<T>(), out.stride(0), out.size(0), true,
                  [](const T* v, T* o, int64_t n) { std::copy(v, v + n, o); });
      return;
    }
    index_walk<T>(index, dim, src.raw_data(), src.strides(), out.raw_data(), out.strides(),
                  [](const T& v, T& o) { o = v; });
  });
}

void topk(const Tensor& values, const Tensor& indices, const Tensor& x_in, int64_t k, bool largest) {
  const int64_t len = x_in.size(-1);
  if (values.numel() == 0) return;
  const int64_t rows = x_in.numel() / len;
  Tensor x = x_in.contiguous();
  dispatch_numeric(x.dtype(), "topk", [&]<class T>() {
    const T* px = x.data<T>();
    T* pv = values.data<T>();
    int64_t* pi = indices.data<int64_t>();
#pragma omp parallel if (rows > 1 && rows * len > kParallelGrain)
    {
      std::vector<int64_t> order(static_cast<size_t>(k <= kInsertionTopK ? k : len));
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        const T* row = px + r * len;
        if (k <= kInsertionTopK) {
          // One scan keeping the best k sorted; a later element never beats an equal earlier one.
          int64_t have = 0;
          for (int64_t i = 0; i < len; ++i) {
            if (have == k && !ranks_before(row[i], row[order[size_t(k - 1)]], largest)) continue;
            int64_t at = have < k ? have++ : k - 1;
            for (; at > 0 && ranks_before(row[i], row[order[size_t(at - 1)]], largest); --at)
              order[size_t(at)] = order[size_t(at - 1)];
            order[size_t(at)] = i;
          }
        } else {
          auto before = [row, largest](int64_t a, int64_t b) {
            if (ranks_before(row[a], row[b], largest)) return true;
            return !ranks_before(row[b], row[a], largest) && a < b;  // tie: lower index first
          };
          std::iota(order.begin(), order.end(), int64_t(0));
          if (k < len) std::nth_element(order.begin(), order.begin() + (k - 1), order.end(), before);
          std::sort(order.begin(), order.begin() + k, before);
        }
        for (int64_t j = 0; j < k; ++j) {
          pv[r * k + j] = row[order[size_t(j)]];
          pi[r * k + j] = order[size_t(j)];
        }
      }
    }
  });
}

void one_hot(const Tensor& out, const Tensor& indices) {
  const int64_t n = indices.numel();
  fill(out, 0.0);
  if (n == 0) return;
  const int64_t classes = out.size(-1);
  Tensor idx = indices.contiguous();
  const int64_t* pi = idx.data<int64_t>();
  dispatch_all(out.dtype(), "one_hot", [&]<class T>() {
    T* po = out.data<T>();
    const T one(1.0f);
#pragma omp parallel for schedule(static) if (n > kParallelGrain)
    for (int64_t i = 0; i < n; ++i) po[i * classes + pi[i]] = one;
  });
}

}  // namespace moh::cpu
