// Helpers for the CUDA-vs-CPU parity suites (tests/core/cuda/*_parity_test.cpp): run an op on
// random CPU inputs and on their GPU copies and compare. Every test starts with MOH_REQUIRE_GPU(),
// which skips it with a message on machines (or builds) without a CUDA device, so the suites
// compile everywhere and run where a GPU is.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/backend_flags.h"
#include "core/device.h"
#include "core/tensor.h"
#include "tests/test_util.h"

#define MOH_REQUIRE_GPU()                                                                            \
  do {                                                                                               \
    if (::moh::cuda_device_count() == 0)                                                             \
      GTEST_SKIP() << (::moh::cuda_compiled() ? "no CUDA device on this machine"                     \
                                              : "CPU-only build (MOH_CUDA=OFF): no CUDA backend"); \
  } while (0)

namespace moh::test {

inline Tensor gpu(const Tensor& t) { return t.to(Device::cuda(0)); }
inline Tensor cpu(const Tensor& t) { return t.to(Device::cpu()); }

// A non-contiguous view holding the same values as t (dims >= 2): the transpose of a contiguous
// transposed copy, so strides are swapped on the last two dims.
inline Tensor strided_like(const Tensor& t) {
  if (t.dim() < 2) return t;
  return t.transpose(-2, -1).contiguous().transpose(-2, -1);
}

// Elementwise |got - want| <= atol + rtol * |want| (NaN matches NaN, infinities match by sign),
// got from the GPU, want from the CPU; reports the first mismatch with its flat index.
inline void expect_close(const Tensor& got, const Tensor& want, double rtol, double atol, const std::string& what) {
  ASSERT_TRUE(got.defined() && want.defined()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_EQ(got.dtype(), want.dtype()) << what;
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    const bool same_special = (std::isnan(g[i]) && std::isnan(w[i])) || (std::isinf(w[i]) && g[i] == w[i]);
    if (same_special) continue;
    const double err = std::abs(g[i] - w[i]);
    if (!(err <= atol + rtol * std::abs(w[i]))) {
      ADD_FAILURE() << what << ": element " << i << " of " << g.size() << " is " << g[i] << " on cuda, " << w[i]
                    << " on cpu (|diff| " << err << " > " << atol << " + " << rtol << " * |cpu|)";
      return;
    }
  }
}

// float32 parity bound of the issue: 1e-5 relative (plus a small absolute floor for values near 0).
inline void expect_parity_f32(const Tensor& got, const Tensor& want, const std::string& what) {
  expect_close(got, want, 1e-5, 1e-6, what);
}

// Restores the process-wide numerics switches (TF32, deterministic algorithms, GEMM autocast) when a
// test that changes them ends.
struct FlagsGuard {
  bool tf32 = allow_tf32(), deterministic = deterministic_algorithms();
  DType autocast = gemm_autocast();
  ~FlagsGuard() {
    set_allow_tf32(tf32);
    set_deterministic_algorithms(deterministic);
    set_gemm_autocast(autocast);
  }
};

// |got - want| <= rtol * scale + atol elementwise (got from the GPU, want and scale from the CPU): the
// bound for sums whose rounding grows with the magnitude of their terms (scale = the op on |inputs|).
inline void expect_scaled(const Tensor& got, const Tensor& want, const Tensor& scale, double rtol, double atol,
                          const std::string& what) {
  ASSERT_TRUE(got.defined() && want.defined()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const std::vector<double> g = cpu(got).to(DType::Float64).to_vector<double>(), w = want.to_vector<double>(),
                            s = scale.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    const double bound = rtol * s[i] + atol;
    if (!(std::abs(g[i] - w[i]) <= bound)) {
      ADD_FAILURE() << what << ": element " << i << " of " << g.size() << " is " << g[i] << " on cuda, " << w[i]
                    << " on cpu (bound " << bound << ")";
      return;
    }
  }
}

// Exact equality (integer, bool and index results; copies).
inline void expect_equal(const Tensor& got, const Tensor& want, const std::string& what) {
  expect_close(got, want, 0.0, 0.0, what);
}

}  // namespace moh::test
