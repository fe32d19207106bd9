// CUDA vs CPU parity of group_norm and group_norm_backward (out, mean, rstd, grad_x, grad_weight,
// grad_bias; with and without affine): warp rows (up to 1024 values) and block rows, planes of one
// value (2-D input) and of more than 1024; float32 to 1e-5, float64, bfloat16/float16 against the
// CPU float32 result of the same rounded inputs; a non-contiguous input; bitwise reproducibility.
#include <string>
#include <vector>

#include "core/ops.h"
#include "tests/core/cuda/parity.h"

namespace moh {
namespace {

using test::cpu;
using test::expect_close;
using test::gpu;
using test::rand_t;

struct Case {
  Shape x;
  int64_t groups;
};
// Rows of 4 * 9, 2 * 256 (warp) and 16 * 256, 1 * 1600 (block: planes beyond a warp's row too), 2-D.
const Case kCases[] = {{{3, 8, 3, 3}, 2}, {{2, 64, 16, 16}, 32}, {{2, 32, 16, 16}, 2}, {{2, 4, 40, 40}, 4},
                       {{5, 12}, 3}};

struct Results {
  NormForward f;
  NormBackward b;
};
Results run(const Tensor& x, int64_t groups, const Tensor& w, const Tensor& bias, const Tensor& g) {
  Results r{group_norm(x, groups, w, bias, 1e-5), {}};
  r.b = group_norm_backward(g, x, groups, r.f, w, bias.defined());
  return r;
}

// want from the CPU on `x` (float32 or float64), got from the GPU on `xg` (x, or x rounded to a half type).
void check(const Case& c, DType gpu_dtype, DType cpu_dtype, double rtol, double atol, bool affine) {
  const std::string what = str_cat(dtype_name(gpu_dtype), " groups ", c.groups, affine ? " affine" : "");
  const Tensor xh = rand_t(c.x, 1).to(gpu_dtype), gh = rand_t(c.x, 2).to(gpu_dtype);
  const Tensor wh = affine ? rand_t({c.x[1]}, 3).to(gpu_dtype) : Tensor();
  const Tensor bh = affine ? rand_t({c.x[1]}, 4).to(gpu_dtype) : Tensor();
  auto on_cpu = [&](const Tensor& t) { return t.defined() ? t.to(cpu_dtype) : t; };
  auto on_gpu = [](const Tensor& t) { return t.defined() ? gpu(t) : t; };
  const Results want = run(on_cpu(xh), c.groups, on_cpu(wh), on_cpu(bh), on_cpu(gh));
  const Results got = run(gpu(xh), c.groups, on_gpu(wh), on_gpu(bh), gpu(gh));
  auto same = [&](const Tensor& g, const Tensor& w, const char* name) {
    expect_close(cpu(g).to(cpu_dtype), w, rtol, atol, what + " " + name);
  };
  same(got.f.out, want.f.out, "out");
  same(got.f.mean, want.f.mean, "mean");
  same(got.f.rstd, want.f.rstd, "rstd");
  same(got.b.grad_x, want.b.grad_x, "grad_x");
  if (!affine) return;
  same(got.b.grad_weight, want.b.grad_weight, "grad_weight");
  same(got.b.grad_bias, want.b.grad_bias, "grad_bias");
}

TEST(CudaParityGroupNorm, Float32AndFloat64MatchTheCpu) {
  MOH_REQUIRE_GPU();
  for (const Case& c : kCases)
    for (bool affine : {true, false}) {
      check(c, DType::Float32, DType::Float32, 1e-5, 1e-5, affine);
      check(c, DType::Float64, DType::Float64, 1e-10, 1e-12, affine);
    }
}

TEST(CudaParityGroupNorm, HalfTypesMatchTheCpuOnRoundedInputs) {
  MOH_REQUIRE_GPU();
  for (const Case& c : kCases) {
    check(c, DType::BFloat16, DType::Float32, 1e-2, 1e-2, true);
    check(c, DType::Float16, DType::Float32, 2e-3, 2e-3, true);
  }
}

TEST(CudaParityGroupNorm, NonContiguousInput) {
  MOH_REQUIRE_GPU();
  const Tensor x = rand_t({4, 6, 5, 7}, 5), w = rand_t({6}, 6);
  const Tensor xg = test::strided_like(gpu(x));
  ASSERT_FALSE(xg.is_contiguous());
  expect_close(cpu(group_norm(xg, 3, gpu(w), gpu(w), 1e-5).out), group_norm(x, 3, w, w, 1e-5).out, 1e-5, 1e-5,
               "strided out");
}

TEST(CudaParityGroupNorm, BitwiseReproducible) {
  MOH_REQUIRE_GPU();
  const Tensor x = gpu(rand_t({8, 128, 16, 16}, 7)), g = gpu(rand_t({8, 128, 16, 16}, 8)), w = gpu(rand_t({128}, 9));
  const NormForward f = group_norm(x, 32, w, w, 1e-5);
  const NormBackward a = group_norm_backward(g, x, 32, f, w, true), b = group_norm_backward(g, x, 32, f, w, true);
  test::expect_same_bytes(cpu(a.grad_weight), cpu(b.grad_weight), "grad_weight");
  test::expect_same_bytes(cpu(a.grad_bias), cpu(b.grad_bias), "grad_bias");
  test::expect_same_bytes(cpu(a.grad_x), cpu(b.grad_x), "grad_x");
}

}  // namespace
}  // namespace moh
