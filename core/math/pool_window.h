// Window index math of the sliding-window image ops (avg_pool2d), shared by the CPU and CUDA
// kernels: along one axis, output position o reads the input positions [o * stride, o * stride +
// kernel), and covering_windows inverts that for the gather-form backward.
#pragma once

#include <cstdint>

#include "core/macros.h"

namespace moh {

// The output positions [begin, end) of one axis (out_size of them) whose window contains input
// position i; empty (end <= begin) where stride > kernel leaves i in a gap or past the last window.
struct WindowRange {
  int64_t begin, end;
};
MOH_HOST_DEVICE MOH_FORCE_INLINE WindowRange covering_windows(int64_t i, int64_t kernel, int64_t stride,
                                                              int64_t out_size) {
  const int64_t begin = i < kernel ? 0 : (i - kernel) / stride + 1;  // first o with o * stride + kernel > i
  const int64_t last = i / stride + 1;                                // one past the last o with o * stride <= i
  return {begin, last < out_size ? last : out_size};
}

}  // namespace moh
