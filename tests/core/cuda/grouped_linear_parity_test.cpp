// CUDA vs CPU parity of the grouped row projections (gather_linear / scatter_linear and their
// backward kernels): with and without bias, empty groups, rows shared by several groups and
// repeated within one, weights and biases as strided slices, sizes that are not multiples of a
// warp (and rows wider than one block), no rows at all, float32/float64 and bfloat16/float16,
// run-to-run reproducibility, and the input errors on GPU tensors.
// GEMM results are bounded relative to the scale of their summed terms, computed by the same op
// on |inputs| (so it is exact for every output); sums the GPU performs in the CPU's order (bias
// gradients) must match bitwise.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/factory.h"
#include "core/ops.h"
#include "tests/core/cuda/parity.h"

namespace moh {
namespace {

using test::cpu;
using test::expect_equal;
using test::gpu;
using test::rand_t;

struct Routing {
  Tensor index, offsets;
  int64_t rows = 0;  // N: rows of x / of scatter_linear's result
};

// Three groups over 7 rows: group 1 is empty, rows 2 and 5 appear in two groups.
Routing small_routing() {
  return {from_vector<int64_t>({0, 2, 5, 2, 3, 5, 6}, {7}), from_vector<int64_t>({0, 3, 3, 7}, {4}), 7};
}

// `groups` groups over n rows, each taking about a third of the rows (in order); group 1 is empty
// and the last group repeats its first row at its end.
Routing random_routing(int64_t n, int64_t groups, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> idx, off{0};
  for (int64_t g = 0; g < groups; ++g) {
    const size_t first = idx.size();
    for (int64_t t = 0; t < n && g != 1; ++t)
      if (rng() % 3 == 0) idx.push_back(t);
    if (g == groups - 1 && idx.size() > first) idx.push_back(idx[first]);
    off.push_back(int64_t(idx.size()));
  }
  return {from_vector<int64_t>(idx, {int64_t(idx.size())}), from_vector<int64_t>(off, {groups + 1}), n};
}

Routing no_rows(int64_t n, int64_t groups) {
  return {zeros({0}, DType::Int64), zeros({groups + 1}, DType::Int64), n};
}

// The weight [G, Dout, Din] as a slice of padded rows (row stride Din + 3), and the bias [G, Dout]
// as every other column of a wider matrix: both built the same way on either device.
Tensor weight_view(const Tensor& base, int64_t din) { return base.narrow(2, 1, din); }
Tensor bias_view(const Tensor& base) { return base.slice(1, 0, base.size(1), 2); }

// |got - want| <= rtol * scale elementwise (+ a floor for all-zero scales).
void expect_scaled(const Tensor& got, const Tensor& want, const Tensor& scale, double rtol, const std::string& what) {
  ASSERT_TRUE(got.defined() && want.defined()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const std::vector<double> g = cpu(got).to(DType::Float64).to_vector<double>(), w = want.to_vector<double>(),
                            s = scale.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i)
    if (!(std::abs(g[i] - w[i]) <= rtol * s[i] + 1e-30)) {
      ADD_FAILURE() << what << ": element " << i << " of " << g.size() << " is " << g[i] << " on cuda, " << w[i]
                    << " on cpu (bound " << rtol * s[i] << ")";
      return;
    }
}

// Runs every op on the CPU (float32/float64 inputs `x`, `w`, `b`, `go`: in dtype `dt` already
// rounded for 16-bit runs), on |inputs| for the bounds, and on the GPU in dtype dt.
void check_all(const Routing& r, int64_t din, int64_t dout, DType dt, uint64_t seed, const std::string& name) {
  const int64_t groups = r.offsets.numel() - 1, total = r.index.numel();
  const DType ref = dt == DType::Float64 ? DType::Float64 : DType::Float32;
  const double rtol = dt == DType::Float64 ? 1e-12
                      : dt == DType::Float32 ? 1e-5
                      : dt == DType::BFloat16 ? 1.0 / 128  // one rounding of the output and of
                                              : 1.0 / 1024;  // each partial sum, all <= scale
  auto input = [&](const Shape& s, uint64_t k) { return rand_t(s, seed + k, dt); };
  const Tensor x = input({r.rows, din}, 1), wb = input({groups, dout, din + 3}, 2), bb = input({groups, 2 * dout}, 3);
  const Tensor go_g = input({total, dout}, 4), go_s = input({r.rows, dout}, 5), src = input({total, din}, 6);
  auto host = [&](const Tensor& t) { return t.to(ref); };
  const Tensor w = weight_view(host(wb), din), b = bias_view(host(bb));
  const Tensor gw = weight_view(gpu(wb), din), gbias = bias_view(gpu(bb));
  const Tensor gi = gpu(r.index), go = gpu(r.offsets);
  const std::string what = str_cat(name, " ", dtype_name(dt), " Din ", din, " Dout ", dout);

  for (bool with_bias : {false, true}) {
    const std::string wb_name = what + (with_bias ? " with bias" : " without bias");
    const Tensor bias = with_bias ? b : Tensor(), gb = with_bias ? gbias : Tensor();
    const Tensor out = gather_linear(gpu(x), gi, go, gw, gb);
    EXPECT_EQ(out.dtype(), dt) << wb_name;
    expect_scaled(out, gather_linear(host(x), r.index, r.offsets, w, bias),
                  gather_linear(abs(host(x)), r.index, r.offsets, abs(w), with_bias ? abs(b) : Tensor()), rtol,
                  "gather_linear " + wb_name);
    const GroupedLinearBackward want =
        gather_linear_backward(host(go_g), host(x), r.index, r.offsets, w, with_bias);
    const GroupedLinearBackward scale =
        gather_linear_backward(abs(host(go_g)), abs(host(x)), r.index, r.offsets, abs(w), with_bias);
    const GroupedLinearBackward got = gather_linear_backward(gpu(go_g), gpu(x), gi, go, gw, with_bias);
    expect_scaled(got.grad_input, want.grad_input, scale.grad_input, rtol, "gather grad_x " + wb_name);
    expect_scaled(got.grad_weight, want.grad_weight, scale.grad_weight, rtol, "gather grad_w " + wb_name);
    if (with_bias && dt == ref) expect_equal(cpu(got.grad_bias), want.grad_bias, "gather grad_bias " + wb_name);
    if (with_bias) expect_scaled(got.grad_bias, want.grad_bias, scale.grad_bias, rtol, "gather grad_bias " + wb_name);
    const GroupedLinearBackward again = gather_linear_backward(gpu(go_g), gpu(x), gi, go, gw, with_bias);
    test::expect_same_bytes(cpu(again.grad_input), cpu(got.grad_input), "gather grad_x twice " + wb_name);
  }

  expect_scaled(scatter_linear(gpu(src), gi, go, gw, r.rows), scatter_linear(host(src), r.index, r.offsets, w, r.rows),
                scatter_linear(abs(host(src)), r.index, r.offsets, abs(w), r.rows), rtol, "scatter_linear " + what);
  test::expect_same_bytes(cpu(scatter_linear(gpu(src), gi, go, gw, r.rows)),
                          cpu(scatter_linear(gpu(src), gi, go, gw, r.rows)), "scatter_linear twice " + what);
  const GroupedLinearBackward want = scatter_linear_backward(host(go_s), host(src), r.index, r.offsets, w);
  const GroupedLinearBackward scale = scatter_linear_backward(abs(host(go_s)), abs(host(src)), r.index, r.offsets,
                                                              abs(w));
  const GroupedLinearBackward got = scatter_linear_backward(gpu(go_s), gpu(src), gi, go, gw);
  expect_scaled(got.grad_input, want.grad_input, scale.grad_input, rtol, "scatter grad_src " + what);
  expect_scaled(got.grad_weight, want.grad_weight, scale.grad_weight, rtol, "scatter grad_w " + what);
}

TEST(CudaParityGroupedLinear, SharedRowsAndEmptyGroup) {
  MOH_REQUIRE_GPU();
  for (DType dt : {DType::Float32, DType::Float64}) check_all(small_routing(), 5, 4, dt, 10, "small routing");
}

TEST(CudaParityGroupedLinear, RandomRoutingOddSizes) {
  MOH_REQUIRE_GPU();
  for (DType dt : {DType::Float32, DType::Float64}) {
    check_all(random_routing(300, 5, 1), 37, 45, dt, 20, "random routing");
    check_all(random_routing(97, 3, 2), 19, 300, dt, 30, "wide rows");  // Dout > one block of threads
    check_all(random_routing(50, 4, 3), 1, 1, dt, 40, "single column");
  }
}

TEST(CudaParityGroupedLinear, NoRows) {
  MOH_REQUIRE_GPU();
  for (DType dt : {DType::Float32, DType::Float64}) check_all(no_rows(6, 3), 5, 4, dt, 50, "no rows");
}

TEST(CudaParityGroupedLinear, HalfPrecisionAgainstFloat32OfRoundedInputs) {
  MOH_REQUIRE_GPU();
  for (DType dt : {DType::BFloat16, DType::Float16}) {
    check_all(small_routing(), 5, 4, dt, 60, "small routing");
    check_all(random_routing(300, 5, 4), 37, 45, dt, 70, "random routing");
  }
}

TEST(CudaParityGroupedLinear, ErrorsOnGpuTensors) {
  MOH_REQUIRE_GPU();
  const Routing r = small_routing();
  const Tensor x = gpu(rand_t({7, 5}, 1)), w = gpu(rand_t({3, 4, 5}, 2));
  test::expect_error([&] { gather_linear(gpu(rand_t({5, 5}, 3)), gpu(r.index), gpu(r.offsets), w, Tensor()); },
                     {"gather_linear", "index[2] = 5 is out of range [0, 5)"});
  test::expect_error(
      [&] { gather_linear(x, gpu(r.index), gpu(from_vector<int64_t>({0, 3, 3, 6}, {4})), w, Tensor()); },
      {"gather_linear", "offsets must run from 0 to R = 7"});
  test::expect_error(
      [&] { gather_linear(x, gpu(r.index), gpu(from_vector<int64_t>({0, 4, 3, 7}, {4})), w, Tensor()); },
      {"gather_linear", "offsets decrease at group 1"});
  test::expect_error([&] { gather_linear(x, r.index, r.offsets, w, Tensor()); },
                     {"gather_linear", "must be on the device of the rows"});
  test::expect_error([&] { scatter_linear(gpu(rand_t({7, 5}, 4)), gpu(r.index), gpu(r.offsets), w, 6); },
                     {"scatter_linear", "index[6] = 6 is out of range [0, 6)"});
  test::expect_error([&] { gather_linear(x.to(DType::Int64), gpu(r.index), gpu(r.offsets), w, Tensor()); },
                     {"gather_linear"});
}

}  // namespace
}  // namespace moh
