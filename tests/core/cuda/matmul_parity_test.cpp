// CUDA vs CPU parity of matmul/bmm/addmm (cuBLASLt): single, folded and strided-batched products,
// broadcast batches (uniform and irregular batch strides), transposed, sliced and compacted operand
// views, addmm's bias epilogue ([N] bias) and copy path (other biases), empty and K = 0 edges,
// float64, bfloat16/float16, TF32, and run-to-run reproducibility.
// Bounds are relative to the scale of the summed terms, (|a| @ |b|)[i, j] (+ |bias|): any two
// summation orders differ by a few float32 roundings of partial sums of that size, while an entry
// that cancels to ~0 has no meaningful relative error of its own.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "core/backend_flags.h"
#include "core/factory.h"
#include "core/ops.h"
#include "tests/core/cuda/parity.h"

namespace moh {
namespace {

using test::cpu;
using test::expect_close;
using test::expect_scaled;
using test::FlagsGuard;
using test::gpu;
using test::rand_t;
using test::strided_like;

// A view built the same way from a CPU tensor and from its GPU copy.
using View = std::function<Tensor(const Tensor&)>;
const View kWhole = [](const Tensor& t) { return t; };

double gemm_rtol(DType dt) { return dt == DType::Float64 ? 1e-12 : 1e-5; }

// matmul of the two views on both devices; also checks the GPU views kept the CPU views' strides.
void check_matmul(const Tensor& a_base, const View& va, const Tensor& b_base, const View& vb, const std::string& what) {
  const Tensor a = va(a_base), b = vb(b_base), ga = va(gpu(a_base)), gb = vb(gpu(b_base));
  ASSERT_EQ(ga.strides(), a.strides()) << what;
  ASSERT_EQ(gb.strides(), b.strides()) << what;
  const Tensor got = matmul(ga, gb);
  EXPECT_EQ(got.dtype(), a.dtype()) << what;
  EXPECT_TRUE(got.device().is_cuda()) << what;
  expect_scaled(got, matmul(a, b), matmul(abs(a), abs(b)), gemm_rtol(a.dtype()), 0.0, what);
}

void check_plain(const Shape& as, const Shape& bs, DType dt, uint64_t seed) {
  check_matmul(rand_t(as, seed, dt), kWhole, rand_t(bs, seed + 1, dt), kWhole,
               str_cat(dtype_name(dt), " ", shape_str(as), " @ ", shape_str(bs)));
}

TEST(CudaParityMatmul, ContiguousShapes) {
  MOH_REQUIRE_GPU();
  for (DType dt : {DType::Float32, DType::Float64}) {
    check_plain({1, 1}, {1, 1}, dt, 1);
    check_plain({7, 13}, {13, 5}, dt, 3);
    check_plain({128, 256}, {256, 64}, dt, 5);
    check_plain({1, 300}, {300, 3}, dt, 7);   // M = 1
    check_plain({33, 1}, {1, 17}, dt, 9);     // K = 1 (outer product)
    check_plain({4, 7, 13}, {4, 13, 5}, dt, 11);  // strided batch
  }
}

TEST(CudaParityMatmul, BroadcastBatches) {
  MOH_REQUIRE_GPU();
  for (DType dt : {DType::Float32, DType::Float64}) {
    check_plain({5, 7, 13}, {13, 6}, dt, 21);        // b shared: folded into one [35, 13] GEMM
    check_plain({2, 3, 7, 13}, {13, 6}, dt, 23);     // two batch dims folded
    check_plain({7, 13}, {5, 13, 6}, dt, 25);        // a shared: batch stride 0
    check_plain({3, 1, 7, 13}, {4, 13, 5}, dt, 27);  // irregular batch strides on both: materialised
    check_plain({1, 4, 7, 13}, {3, 1, 13, 5}, dt, 29);
  }
}

TEST(CudaParityMatmul, TransposedSlicedAndStridedViews) {
  MOH_REQUIRE_GPU();
  const View t = [](const Tensor& x) { return x.transpose(-2, -1); };
  for (DType dt : {DType::Float32, DType::Float64}) {
    const std::string n(dtype_name(dt));
    check_matmul(rand_t({13, 7}, 31, dt), t, rand_t({13, 5}, 32, dt), kWhole, n + " a^T");
    check_matmul(rand_t({7, 13}, 33, dt), kWhole, rand_t({5, 13}, 34, dt), t, n + " b^T");
    check_matmul(rand_t({128, 256}, 35, dt), t, rand_t({64, 128}, 36, dt), t, n + " a^T b^T");
    check_matmul(rand_t({4, 13, 7}, 37, dt), t, rand_t({4, 5, 13}, 38, dt), t, n + " batched a^T b^T");
    // Padded rows: sliced columns keep the parent's row stride as leading dimension.
    check_matmul(rand_t({7, 20}, 39, dt), [](const Tensor& x) { return x.narrow(1, 3, 13); },
                 rand_t({13, 9}, 40, dt), [](const Tensor& x) { return x.narrow(1, 1, 5); }, n + " sliced");
    check_matmul(rand_t({3, 7, 20}, 41, dt), [](const Tensor& x) { return x.narrow(2, 2, 13); },
                 rand_t({13, 11}, 42, dt), [](const Tensor& x) { return x.narrow(1, 0, 6); }, n + " sliced folded");
    // Neither row- nor column-major (step 2 in both dims): copied compact first.
    const View every_other = [](const Tensor& x) { return x.slice(-2, 0, x.size(-2), 2).slice(-1, 0, x.size(-1), 2); };
    check_matmul(rand_t({14, 26}, 43, dt), every_other, rand_t({2, 26, 10}, 44, dt), every_other, n + " stepped");
    // A broadcast row (zero row stride on a non-singleton matrix dim).
    check_matmul(rand_t({1, 13}, 45, dt), [](const Tensor& x) { return x.expand({6, 13}); }, rand_t({13, 5}, 46, dt),
                 kWhole, n + " expanded rows");
    const Tensor a = rand_t({9, 17}, 47, dt), b = rand_t({17, 8}, 48, dt);
    expect_scaled(matmul(strided_like(gpu(a)), strided_like(gpu(b))), matmul(a, b), matmul(abs(a), abs(b)),
                  gemm_rtol(dt), 0.0, n + " strided_like");
  }
}

TEST(CudaParityMatmul, BmmAndEmptyEdges) {
  MOH_REQUIRE_GPU();
  const Tensor a = rand_t({3, 8, 11}, 51), b = rand_t({3, 11, 4}, 52);
  expect_scaled(bmm(gpu(a), gpu(b)), bmm(a, b), matmul(abs(a), abs(b)), 1e-5, 0.0, "bmm");
  for (DType dt : {DType::Float32, DType::BFloat16}) {
    const Tensor e = matmul(gpu(zeros({0, 5}, dt)), gpu(zeros({5, 3}, dt)));
    EXPECT_EQ(e.shape(), (Shape{0, 3}));
    // K = 0: the product is all zeros, whatever the uninitialised output held.
    const Tensor z = matmul(gpu(zeros({4, 0}, dt)), gpu(zeros({0, 6}, dt)));
    expect_close(cpu(z).to(DType::Float32), zeros({4, 6}), 0, 0, str_cat(dtype_name(dt), " K = 0"));
    const Tensor bias = rand_t({6}, 53, dt);
    expect_close(cpu(addmm(gpu(bias), gpu(zeros({4, 0}, dt)), gpu(zeros({0, 6}, dt)))).to(DType::Float32),
                 bias.to(DType::Float32).expand({4, 6}).contiguous(), 0, 0, str_cat(dtype_name(dt), " addmm K = 0"));
  }
}

TEST(CudaParityMatmul, AddmmBiasEpilogueAndCopyPath) {
  MOH_REQUIRE_GPU();
  for (DType dt : {DType::Float32, DType::Float64}) {
    const Tensor a = rand_t({7, 13}, 61, dt), b = rand_t({13, 5}, 62, dt), a3 = rand_t({3, 7, 13}, 63, dt);
    const Tensor row = rand_t({5}, 64, dt), full = rand_t({7, 5}, 65, dt), one = rand_t({1}, 66, dt);
    const Tensor wide = rand_t({10}, 67, dt);
    const View stepped = [](const Tensor& x) { return x.slice(0, 0, 10, 2); };  // a strided [5] bias
    const View shifted = [](const Tensor& x) { return x.narrow(0, 1, 5); };     // not 16-byte aligned
    struct Case {
      Tensor bias;
      View view;
      Tensor a;
      const char* what;
    };
    for (const Case& c : {Case{row, kWhole, a, "[N] bias (epilogue)"}, Case{row, kWhole, a3, "[N] bias, batched a"},
                          Case{full, kWhole, a, "[M, N] bias"}, Case{one, kWhole, a, "[1] bias"},
                          Case{wide, stepped, a, "strided [N] bias"},
                          Case{wide, shifted, a, "[N] bias at an unaligned address"}}) {
      const Tensor bias = c.view(c.bias), gbias = c.view(gpu(c.bias));
      const Tensor want = addmm(bias, c.a, b);
      const Tensor scale = add(matmul(abs(c.a), abs(b)), abs(bias));
      expect_scaled(addmm(gbias, gpu(c.a), gpu(b)), want, scale, gemm_rtol(dt), 0.0,
                    str_cat(dtype_name(dt), " addmm ", c.what));
    }
  }
}

// 16-bit GEMMs accumulate in float32: compared with the CPU float32 product of the same rounded
// inputs. Bound: eps * |want| (one rounding of the output) + eps * sqrt(K) (split-K kernels may
// round partial sums to the output type; terms are products of U(-1, 1) values, so partial sums
// grow like sqrt(K)), eps = 2^-7 (bfloat16) or 2^-10 (float16).
TEST(CudaParityMatmul, HalfPrecisionAgainstFloat32OfRoundedInputs) {
  MOH_REQUIRE_GPU();
  const View t = [](const Tensor& x) { return x.transpose(-2, -1); };
  for (DType dt : {DType::BFloat16, DType::Float16}) {
    const double eps = dt == DType::BFloat16 ? 1.0 / 128 : 1.0 / 1024;
    struct Case {
      Shape as, bs;
      View va, vb;
    };
    for (const Case& c : {Case{{7, 13}, {13, 5}, kWhole, kWhole}, Case{{128, 256}, {256, 64}, kWhole, kWhole},
                          Case{{4, 9, 31}, {31, 6}, kWhole, kWhole}, Case{{3, 1, 7, 13}, {4, 13, 5}, kWhole, kWhole},
                          Case{{33, 17}, {40, 33}, t, t}}) {
      const Tensor a16 = rand_t(c.as, 71, dt), b16 = rand_t(c.bs, 72, dt);
      const Tensor a = c.va(a16.to(DType::Float32)), b = c.vb(b16.to(DType::Float32));
      const Tensor want = matmul(a, b);
      const Tensor got = matmul(c.va(gpu(a16)), c.vb(gpu(b16)));
      EXPECT_EQ(got.dtype(), dt);
      const double k = double(a.size(-1));
      expect_scaled(got, want, abs(want), eps, eps * std::sqrt(k),
                    str_cat(dtype_name(dt), " ", shape_str(c.as), " @ ", shape_str(c.bs)));
    }
    const Tensor a16 = rand_t({6, 40}, 73, dt), b16 = rand_t({40, 24}, 74, dt), bias16 = rand_t({24}, 75, dt);
    const Tensor want = addmm(bias16.to(DType::Float32), a16.to(DType::Float32), b16.to(DType::Float32));
    expect_scaled(addmm(gpu(bias16), gpu(a16), gpu(b16)), want, abs(want), eps, eps * std::sqrt(40.0),
                  str_cat(dtype_name(dt), " addmm bias epilogue"));
  }
}

TEST(CudaParityMatmul, Tf32WithinBoundAndOffIsReproducible) {
  MOH_REQUIRE_GPU();
  FlagsGuard flags;
  const Tensor a = rand_t({128, 512}, 81), b = rand_t({512, 96}, 82);
  const Tensor want = matmul(a, b), scale = matmul(abs(a), abs(b));
  set_allow_tf32(false);
  const Tensor first = cpu(matmul(gpu(a), gpu(b))), second = cpu(matmul(gpu(a), gpu(b)));
  test::expect_same_bytes(first, second, "float32 GEMM run twice");
  expect_scaled(first, want, scale, 1e-5, 0.0, "float32 GEMM with TF32 off");
  set_allow_tf32(true);
  expect_scaled(matmul(gpu(a), gpu(b)), want, scale, 1e-2, 0.0, "float32 GEMM with TF32 on");
}

// Mixed precision: float32 tensors, 16-bit GEMM inputs, float32 accumulation and result. Products of
// two bf16/fp16 values are exact in float32, so the GPU must match the CPU's float32 product of the
// rounded inputs to float32 summation-order error; addmm falls back from the bias epilogue.
TEST(CudaParityMatmul, GemmAutocastRoundsInputsAndAccumulatesInFloat32) {
  MOH_REQUIRE_GPU();
  FlagsGuard flags;
  for (DType dt : {DType::BFloat16, DType::Float16}) {
    set_gemm_autocast(dt);
    const Tensor a = rand_t({4, 33, 96}, 101), b = rand_t({96, 40}, 102), bias = rand_t({40}, 103);
    const Tensor ar = a.to(dt).to(DType::Float32), br = b.to(dt).to(DType::Float32);
    const Tensor want = matmul(ar, br), scale = matmul(abs(ar), abs(br));
    const Tensor got = matmul(gpu(a), gpu(b));
    EXPECT_EQ(got.dtype(), DType::Float32);
    expect_scaled(got, want, scale, 1e-5, 0.0, str_cat("autocast ", dtype_name(dt), " matmul"));
    const Tensor a2 = a.view({132, 96}), ar2 = ar.view({132, 96});
    const Tensor want_mm = addmm(bias, ar2, br), scale_mm = add(matmul(abs(ar2), abs(br)), abs(bias));
    expect_scaled(addmm(gpu(bias), gpu(a2), gpu(b)), want_mm, scale_mm, 1e-5, 0.0,
                  str_cat("autocast ", dtype_name(dt), " addmm"));
    // Not the plain float32 product: the inputs really were rounded.
    const double gap = amax(abs(sub(cpu(got), matmul(a, b)))).item<double>();
    EXPECT_GT(gap, 1e-4) << dtype_name(dt) << " autocast left the inputs unrounded";
  }
}

TEST(CudaParityMatmul, DeterministicModeGivesIdenticalBits) {
  MOH_REQUIRE_GPU();
  FlagsGuard flags;
  set_deterministic_algorithms(true);
  // A tall-K product, where split-K algorithms would otherwise be candidates.
  for (DType dt : {DType::Float32, DType::BFloat16}) {
    const Tensor a = gpu(rand_t({64, 8192}, 91, dt)), b = gpu(rand_t({8192, 48}, 92, dt));
    const Tensor first = cpu(matmul(a, b)), second = cpu(matmul(a, b));
    test::expect_same_bytes(first, second, str_cat(dtype_name(dt), " deterministic GEMM run twice"));
    const Tensor bias = gpu(rand_t({48}, 93, dt));
    test::expect_same_bytes(cpu(addmm(bias, a, b)), cpu(addmm(bias, a, b)), str_cat(dtype_name(dt), " addmm twice"));
  }
}

TEST(CudaParityMatmul, ErrorsMatchCpu) {
  MOH_REQUIRE_GPU();
  test::expect_error([] { matmul(gpu(rand_t({3, 4}, 1)), gpu(rand_t({5, 2}, 2))); }, {"matmul", "inner dims differ"});
  test::expect_error([] { matmul(gpu(rand_t({3, 4}, 1)), gpu(rand_t({4, 2}, 2, DType::Float64))); },
                     {"matmul", "dtype mismatch"});
  test::expect_error([] { matmul(gpu(zeros({3, 4}, DType::Int64)), gpu(zeros({4, 2}, DType::Int64))); },
                     {"matmul", "expected float32, float64, bfloat16 or float16 operands"});
  test::expect_error([] { matmul(rand_t({3, 4}, 1, DType::BFloat16), rand_t({4, 2}, 2, DType::BFloat16)); },
                     {"matmul", "expected float32 or float64 operands"});  // the CPU has no 16-bit math
}

}  // namespace
}  // namespace moh
