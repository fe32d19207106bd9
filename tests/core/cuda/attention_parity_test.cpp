// CUDA vs CPU parity of attention and attention_packed, forward (out, lse) and backward (grad_q,
// grad_k, grad_v): causal and not, Tq == Tk, Tq < Tk (decode-like), Tq > Tk (rows that see no key:
// out 0, lse -inf), odd sizes across the kernels' 16-row and 32-key tiles, Dv != D, head dims up to
// 256, strided views of a fused qkv projection, packed rows with empty groups and unordered causal
// positions, the 16-bit dtypes, bitwise reproducible backward runs, empty inputs and errors, and
// grouped-query attention (k, v with Hkv < H heads, dense and packed, grad_k/grad_v summed over
// each group by one writer: bitwise reproducible too).
// Inputs are uniform in [-1, 1) with scale 1/sqrt(D), so scores stay modest and the float32 bound
// (1e-5 relative) measures the kernels, not ill-conditioning. Gradients get an absolute floor of
// 1e-5 x the tensor's largest |value| on top: dS = P (dP - delta) cancels to rounding noise where
// one key dominates a row (a causal row that sees a single key has dS exactly 0 in exact math), and
// both backends sum dP and delta in different orders. bfloat16/float16 run on the GPU against the
// CPU's float32 result for the same rounded inputs; the GPU computes in float32, so the bounds are
// the output rounding (half an ulp: 2^-8 bf16, 2^-11 fp16, doubled for margin) and, for gradients,
// also the rounded forward output that delta = dO . O reads (relative to the largest gradient).
// lse stays float32 for 16-bit inputs and keeps the float32 bound.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "core/factory.h"
#include "core/ops.h"
#include "tests/core/cuda/parity.h"

namespace moh::test {
namespace {

struct Result {
  AttentionForward fwd;
  AttentionBackward grads;
};

Result run_dense(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& go, double scale, bool causal) {
  AttentionForward fwd = attention(q, k, v, scale, causal);
  return {fwd, attention_backward(go, q, k, v, fwd, scale, causal)};
}

Result run_packed(const Tensor& q_rows, const Tensor& offsets, const Tensor& pos, const Tensor& k, const Tensor& v,
                  const Tensor& go, double scale, bool causal, int64_t heads = 0) {
  AttentionForward fwd = attention_packed(q_rows, offsets, pos, k, v, scale, causal, heads);
  return {fwd, attention_packed_backward(go, q_rows, offsets, pos, k, v, fwd, scale, causal, heads)};
}

bool is_half(DType dtype) { return dtype == DType::BFloat16 || dtype == DType::Float16; }

// The CPU computes 16-bit cases in float32.
DType host_dtype(DType dtype) { return is_half(dtype) ? DType::Float32 : dtype; }

// Uniform [-1, 1) values of `dtype` (16-bit: float32 values rounded once).
Tensor input(const Shape& shape, uint64_t seed, DType dtype) {
  return is_half(dtype) ? rand_t(shape, seed).to(dtype) : rand_t(shape, seed, dtype);
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (double x : t.to_vector<double>())
    if (std::isfinite(x)) m = std::max(m, std::abs(x));
  return m;
}

enum class Output { Out, Lse, Grad };

// One output of a GPU run against the CPU run, within the bound of the dtype (header comment).
void expect_output(const Tensor& got_gpu, const Tensor& want, DType dtype, Output kind, const std::string& what) {
  ASSERT_TRUE(got_gpu.device().is_cuda()) << what;
  Tensor got = cpu(got_gpu);
  if (kind == Output::Lse) {
    EXPECT_EQ(got.dtype(), host_dtype(dtype)) << what << ": lse is float32 for 16-bit inputs";
  }
  if (got.dtype() != want.dtype()) got = got.to(want.dtype());
  if (dtype == DType::Float64) return expect_close(got, want, 1e-10, 1e-12, what);
  const bool f32_bound = kind == Output::Lse || (dtype == DType::Float32 && kind == Output::Out);
  if (f32_bound) return expect_parity_f32(got, want, what);
  if (dtype == DType::Float32) return expect_close(got, want, 1e-5, std::max(1e-6, 1e-5 * max_abs(want)), what);
  const bool bf16 = dtype == DType::BFloat16;
  if (kind == Output::Out) return expect_close(got, want, bf16 ? 8e-3 : 1e-3, 1e-6, what);
  const double rel = bf16 ? 2e-2 : 4e-3;
  expect_close(got, want, rel, rel * max_abs(want), what);
}

void expect_match(const Result& got, const Result& want, DType dtype) {
  expect_output(got.fwd.out, want.fwd.out, dtype, Output::Out, "out");
  expect_output(got.fwd.lse, want.fwd.lse, dtype, Output::Lse, "lse");
  expect_output(got.grads.grad_q, want.grads.grad_q, dtype, Output::Grad, "grad_q");
  expect_output(got.grads.grad_k, want.grads.grad_k, dtype, Output::Grad, "grad_k");
  expect_output(got.grads.grad_v, want.grads.grad_v, dtype, Output::Grad, "grad_v");
}

// Bitwise equality of two GPU runs.
void expect_identical(const Result& a, const Result& b) {
  expect_equal(cpu(a.fwd.out), cpu(b.fwd.out), "out");
  expect_equal(cpu(a.fwd.lse), cpu(b.fwd.lse), "lse");
  expect_equal(cpu(a.grads.grad_q), cpu(b.grads.grad_q), "grad_q");
  expect_equal(cpu(a.grads.grad_k), cpu(b.grads.grad_k), "grad_k");
  expect_equal(cpu(a.grads.grad_v), cpu(b.grads.grad_v), "grad_v");
}

struct DenseCase {
  int64_t B, H, tq, tk, d, dv;
  bool causal;
};

std::string name(const DenseCase& c, DType dtype) {
  std::ostringstream s;
  s << dtype_name(dtype) << " B" << c.B << " H" << c.H << " Tq" << c.tq << " Tk" << c.tk << " D" << c.d << " Dv"
    << c.dv << (c.causal ? " causal" : "");
  return s.str();
}

void check_dense(const DenseCase& c, DType dtype, uint64_t seed) {
  SCOPED_TRACE(name(c, dtype));
  Tensor q = input({c.B, c.H, c.tq, c.d}, seed, dtype), k = input({c.B, c.H, c.tk, c.d}, seed + 1, dtype);
  Tensor v = input({c.B, c.H, c.tk, c.dv}, seed + 2, dtype), go = input({c.B, c.H, c.tq, c.dv}, seed + 3, dtype);
  const double scale = 1.0 / std::sqrt(double(c.d));
  const DType host = host_dtype(dtype);
  const Result want = run_dense(q.to(host), k.to(host), v.to(host), go.to(host), scale, c.causal);
  const Result got = run_dense(gpu(q), gpu(k), gpu(v), gpu(go), scale, c.causal);
  EXPECT_EQ(got.fwd.out.shape(), (Shape{c.B, c.H, c.tq, c.dv}));
  EXPECT_TRUE(got.fwd.out.permute({0, 2, 1, 3}).is_contiguous());
  expect_match(got, want, dtype);
}

const std::vector<DenseCase>& dense_cases() {
  static const std::vector<DenseCase> cases{
      {2, 3, 17, 17, 16, 16, false},   // one partial query tile, one partial key tile
      {2, 3, 17, 17, 16, 16, true},
      {1, 2, 130, 130, 64, 64, false},  // many query and key tiles
      {1, 2, 130, 130, 64, 64, true},
      {2, 2, 1, 1, 16, 16, true},       // T = 1
      {1, 3, 5, 130, 80, 80, true},     // decode-like: Tq < Tk, D = 80
      {2, 2, 1, 130, 64, 64, true},     // one query against a long cache
      {1, 2, 17, 130, 80, 48, false},   // Dv != D
      {1, 2, 40, 9, 16, 24, true},      // Tq > Tk: the first 31 rows see no key
      {1, 2, 50, 50, 128, 96, true},    // head dims of the middle register bucket
      {1, 1, 33, 70, 256, 200, true},   // the largest head dims
  };
  return cases;
}

TEST(CudaParityAttention, DenseFloat32MatchesCpu) {
  MOH_REQUIRE_GPU();
  uint64_t seed = 100;
  for (const DenseCase& c : dense_cases()) check_dense(c, DType::Float32, seed += 10);
}

TEST(CudaParityAttention, DenseFloat64MatchesCpu) {
  MOH_REQUIRE_GPU();
  uint64_t seed = 200;
  for (const DenseCase& c : dense_cases()) check_dense(c, DType::Float64, seed += 10);
}

TEST(CudaParityAttention, DenseHalfTypesWithinRoundingOfCpuFloat32) {
  MOH_REQUIRE_GPU();
  uint64_t seed = 300;
  for (DType dtype : {DType::BFloat16, DType::Float16})
    for (const DenseCase& c : {DenseCase{2, 3, 17, 17, 16, 16, true}, DenseCase{1, 2, 130, 130, 64, 64, true},
                               DenseCase{1, 3, 5, 130, 80, 48, false}, DenseCase{1, 2, 40, 9, 16, 24, true}})
      check_dense(c, dtype, seed += 10);
}

// q, k, v as slices of one fused [B, T, 3, H, D] projection (strided views, no copy) and grad_out
// as a [B, H, T, D] view of [B, T, H, D] memory: the GPU reads the strides it is given.
TEST(CudaParityAttention, StridedViewsOfAFusedQkv) {
  MOH_REQUIRE_GPU();
  const int64_t B = 2, T = 37, H = 3, D = 64;
  for (DType dtype : {DType::Float32, DType::Float64})
    for (bool causal : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + (causal ? " causal" : ""));
      const Tensor qkv = rand_t({B, T, 3, H, D}, 7, dtype), go_bthd = rand_t({B, T, H, D}, 8, dtype);
      auto views = [&](const Tensor& fused, const Tensor& go) {
        return run_dense(fused.select(2, 0).permute({0, 2, 1, 3}), fused.select(2, 1).permute({0, 2, 1, 3}),
                         fused.select(2, 2).permute({0, 2, 1, 3}), go.permute({0, 2, 1, 3}), 0.125, causal);
      };
      const Result want = views(qkv, go_bthd);
      const Tensor qkv_gpu = gpu(qkv), go_gpu = gpu(go_bthd);
      ASSERT_FALSE(qkv_gpu.select(2, 0).permute({0, 2, 1, 3}).is_contiguous());
      const Result got = views(qkv_gpu, go_gpu);
      expect_match(got, want, dtype);
      // The kernels' arithmetic does not depend on strides: contiguous copies give the same bits.
      const Result contiguous =
          run_dense(qkv_gpu.select(2, 0).permute({0, 2, 1, 3}).contiguous(),
                    qkv_gpu.select(2, 1).permute({0, 2, 1, 3}).contiguous(),
                    qkv_gpu.select(2, 2).permute({0, 2, 1, 3}).contiguous(),
                    go_gpu.permute({0, 2, 1, 3}).contiguous(), 0.125, causal);
      expect_identical(got, contiguous);
    }
}

// Packed rows over B = 2, H = 3 query heads (group g = h * B + b) on Hkv = 3 K/V heads, or as
// given (grouped-query attention): group 1 empty, group 2 every position
// (several 16-row tiles), group 4 a subset in descending order (positions need not be sorted),
// the others pseudo-random subsets; positions run past Tk, so causal limits clamp to Tk. q_rows
// is a column slice of a wider tensor (row stride != D).
struct Packed {
  Tensor q_wide, offsets, pos, k, v, go;
  int64_t d = 0, heads = 0;
  Tensor q_rows(const Tensor& wide) const { return wide.narrow(1, 3, d); }
  double scale() const { return 1.0 / std::sqrt(double(d)); }
};

Packed packed_inputs(int64_t d, int64_t dv, DType dtype, uint64_t seed, int64_t H = 3, int64_t Hkv = 3) {
  const int64_t B = 2, T = 75, tk = 70;
  std::vector<int64_t> offsets{0}, pos;
  for (int64_t g = 0; g < B * H; ++g) {
    std::vector<int64_t> rows;
    for (int64_t t = 0; t < T; ++t)
      if (g != 1 && (g == 2 || ((t * 7 + g * 3) % 5) < 2)) rows.push_back(t);
    if (g == 4) std::reverse(rows.begin(), rows.end());
    pos.insert(pos.end(), rows.begin(), rows.end());
    offsets.push_back(int64_t(pos.size()));
  }
  const int64_t R = int64_t(pos.size());
  Packed p;
  p.d = d;
  p.heads = H;
  p.q_wide = input({R, d + 7}, seed, dtype);
  p.offsets = from_vector(offsets, {B * H + 1});
  p.pos = from_vector(pos, {R});
  p.k = input({B, Hkv, tk, d}, seed + 1, dtype);
  p.v = input({B, Hkv, tk, dv}, seed + 2, dtype);
  p.go = input({R, dv}, seed + 3, dtype);
  return p;
}

Result run_packed_cpu(const Packed& p, DType dtype, bool causal) {
  const DType host = host_dtype(dtype);
  return run_packed(p.q_rows(p.q_wide.to(host)), p.offsets, p.pos, p.k.to(host), p.v.to(host), p.go.to(host),
                    p.scale(), causal, p.heads);
}

Result run_packed_gpu(const Packed& p, bool causal) {
  return run_packed(p.q_rows(gpu(p.q_wide)), gpu(p.offsets), gpu(p.pos), gpu(p.k), gpu(p.v), gpu(p.go), p.scale(),
                    causal, p.heads);
}

TEST(CudaParityAttention, PackedMatchesCpu) {
  MOH_REQUIRE_GPU();
  uint64_t seed = 400;
  for (DType dtype : {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16})
    for (bool causal : {false, true})
      for (const auto& [d, dv] : {std::pair<int64_t, int64_t>{16, 16}, {80, 48}}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " D" + std::to_string(d) + " Dv" + std::to_string(dv) +
                     (causal ? " causal" : ""));
        const Packed p = packed_inputs(d, dv, dtype, seed += 10);
        expect_match(run_packed_gpu(p, causal), run_packed_cpu(p, dtype, causal), dtype);
      }
}

TEST(CudaParityAttention, BackwardIsBitwiseReproducible) {
  MOH_REQUIRE_GPU();
  for (bool causal : {false, true}) {
    const Tensor q = gpu(rand_t({2, 4, 300, 64}, 1)), k = gpu(rand_t({2, 4, 300, 64}, 2));
    const Tensor v = gpu(rand_t({2, 4, 300, 64}, 3)), go = gpu(rand_t({2, 4, 300, 64}, 4));
    expect_identical(run_dense(q, k, v, go, 0.125, causal), run_dense(q, k, v, go, 0.125, causal));
    const Packed p = packed_inputs(64, 32, DType::Float32, 9);
    expect_identical(run_packed_gpu(p, causal), run_packed_gpu(p, causal));
  }
}

// Grouped-query attention, dense: H query heads on Hkv K/V heads, against the CPU's GQA op (which
// tests/core/test_attention_gqa.cpp checks against explicitly repeated K/V).
TEST(CudaParityAttention, GroupedQueryDenseMatchesCpu) {
  MOH_REQUIRE_GPU();
  struct GqaCase {
    int64_t B, H, Hkv, tq, tk, d;
    bool causal;
  };
  uint64_t seed = 500;
  for (DType dtype : {DType::Float32, DType::Float64, DType::BFloat16})
    for (const GqaCase& c : {GqaCase{2, 6, 2, 17, 130, 64, true}, GqaCase{1, 4, 1, 130, 130, 64, false},
                             GqaCase{2, 8, 2, 40, 9, 16, true}, GqaCase{1, 6, 3, 33, 70, 128, false}}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " H" + std::to_string(c.H) + " Hkv" + std::to_string(c.Hkv) +
                   " Tq" + std::to_string(c.tq) + " Tk" + std::to_string(c.tk) + (c.causal ? " causal" : ""));
      seed += 10;
      Tensor q = input({c.B, c.H, c.tq, c.d}, seed, dtype), k = input({c.B, c.Hkv, c.tk, c.d}, seed + 1, dtype);
      Tensor v = input({c.B, c.Hkv, c.tk, c.d}, seed + 2, dtype), go = input({c.B, c.H, c.tq, c.d}, seed + 3, dtype);
      const double scale = 1.0 / std::sqrt(double(c.d));
      const DType host = host_dtype(dtype);
      const Result want = run_dense(q.to(host), k.to(host), v.to(host), go.to(host), scale, c.causal);
      const Result got = run_dense(gpu(q), gpu(k), gpu(v), gpu(go), scale, c.causal);
      EXPECT_EQ(got.grads.grad_k.shape(), k.shape());
      expect_match(got, want, dtype);
    }
}

TEST(CudaParityAttention, GroupedQueryPackedMatchesCpu) {
  MOH_REQUIRE_GPU();
  uint64_t seed = 600;
  for (DType dtype : {DType::Float32, DType::Float64, DType::Float16})
    for (bool causal : {false, true})
      for (const auto& [heads, kv_heads] : {std::pair<int64_t, int64_t>{6, 2}, {4, 1}}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " H" + std::to_string(heads) + " Hkv" +
                     std::to_string(kv_heads) + (causal ? " causal" : ""));
        const Packed p = packed_inputs(64, 32, dtype, seed += 10, heads, kv_heads);
        expect_match(run_packed_gpu(p, causal), run_packed_cpu(p, dtype, causal), dtype);
      }
}

TEST(CudaParityAttention, GroupedQueryBackwardIsBitwiseReproducible) {
  MOH_REQUIRE_GPU();
  for (bool causal : {false, true}) {
    const Tensor q = gpu(rand_t({2, 8, 300, 64}, 1)), k = gpu(rand_t({2, 2, 300, 64}, 2));
    const Tensor v = gpu(rand_t({2, 2, 300, 64}, 3)), go = gpu(rand_t({2, 8, 300, 64}, 4));
    expect_identical(run_dense(q, k, v, go, 0.125, causal), run_dense(q, k, v, go, 0.125, causal));
    const Packed p = packed_inputs(64, 32, DType::Float32, 19, 6, 2);
    expect_identical(run_packed_gpu(p, causal), run_packed_gpu(p, causal));
  }
}

TEST(CudaParityAttention, EmptyQueriesGiveZeroKeyGradients) {
  MOH_REQUIRE_GPU();
  const Tensor k = rand_t({1, 2, 5, 16}, 1), v = rand_t({1, 2, 5, 8}, 2);
  const Result dense = run_dense(gpu(zeros({1, 2, 0, 16})), gpu(k), gpu(v), gpu(zeros({1, 2, 0, 8})), 0.25, true);
  EXPECT_EQ(dense.fwd.out.shape(), (Shape{1, 2, 0, 8}));
  expect_equal(cpu(dense.grads.grad_k), zeros({1, 2, 5, 16}), "dense grad_k");
  expect_equal(cpu(dense.grads.grad_v), zeros({1, 2, 5, 8}), "dense grad_v");
  const Result packed = run_packed(gpu(zeros({0, 16})), gpu(from_vector<int64_t>({0, 0, 0}, {3})),
                                   gpu(zeros({0}, DType::Int64)), gpu(k), gpu(v), gpu(zeros({0, 8})), 0.25, true);
  EXPECT_EQ(packed.fwd.lse.shape(), (Shape{0}));
  expect_equal(cpu(packed.grads.grad_k), zeros({1, 2, 5, 16}), "packed grad_k");
  expect_equal(cpu(packed.grads.grad_v), zeros({1, 2, 5, 8}), "packed grad_v");
}

TEST(CudaParityAttention, RejectsWhatTheKernelsCannotTake) {
  MOH_REQUIRE_GPU();
  const Tensor q = gpu(zeros({1, 1, 4, 300})), k = gpu(zeros({1, 1, 4, 300})), v = gpu(zeros({1, 1, 4, 8}));
  expect_error([&] { attention(q, k, v, 1.0, false); }, {"attention", "head dims up to 256", "300"});
  const Tensor rows = gpu(zeros({3, 8})), k8 = gpu(zeros({1, 2, 5, 8}));
  const Tensor offsets = from_vector<int64_t>({0, 1, 3}, {3}), pos = from_vector<int64_t>({0, 1, 2}, {3});
  expect_error([&] { attention_packed(rows, offsets, gpu(pos), k8, k8, 1.0, true); },
               {"attention_packed", "row_offsets and q_pos must be on"});
  const Tensor half = zeros({1, 1, 4, 8}, DType::BFloat16);
  expect_error([&] { attention(half, half, half, 1.0, false); }, {"attention", "float32 or float64"});
}

}  // namespace
}  // namespace moh::test
