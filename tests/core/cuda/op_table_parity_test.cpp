// The CUDA driver of the op-test table (tests/core/op_table.h), instantiated for every entry: the op's
// forward output and every input gradient on the GPU against the CPU float64 op on the same values
// (inputs and upstream gradient rounded to the GPU's dtype first), for each dtype of the entry's
// bounds (TF32 off), over its small and large cases, and on strided GPU inputs (each layout of
// strided_layouts(), float32, the first case); and, for entries that promise it, the CPU op's bits in
// float32 and float64. Bound: |got - want| <= rtol * scale + atol, scale the
// op on |inputs| and |upstream gradient| for sums of products, else max |want|.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/factory.h"
#include "core/ops.h"
#include "tests/core/cuda/parity.h"
#include "tests/core/op_table.h"

namespace moh::test {
namespace {

Tensor f64(const Tensor& t) { return cpu(t).to(DType::Float64); }

// Every element bounded by max |t|.
Tensor max_abs_like(const Tensor& t) {
  const std::vector<double> v = t.to_vector<double>();
  double m = 0;
  for (double e : v) m = std::max(m, std::abs(e));
  return full(t.shape(), m, DType::Float64);
}

// `inputs` live on the GPU (any layout); the reference runs on their values in float64 on the CPU.
void check_parity(const OpEntry& op, const OpCase& c, const ParityBound& b, const std::vector<Tensor>& inputs,
                  uint64_t seed, const std::string& what) {
  Tensor g;
  const OpResult got = run_op(op, c, inputs, [&](const Tensor& out) { return g = random_like(out, seed); });
  std::vector<Tensor> values, magnitudes;
  for (const Tensor& t : inputs) {
    values.push_back(f64(t));
    magnitudes.push_back(abs(values.back()));
  }
  const Tensor g64 = f64(g);
  if (op.cuda_same_bits && (b.dtype == DType::Float32 || b.dtype == DType::Float64)) {
    std::vector<Tensor> same_dtype;
    for (const Tensor& t : inputs) same_dtype.push_back(cpu(t));
    const OpResult on_cpu = run_op(op, c, same_dtype, [&](const Tensor&) { return cpu(g); });
    expect_same_bytes(cpu(got.out), on_cpu.out, what + " out, bits");
    for (size_t i = 0; i < got.grads.size(); ++i)
      expect_same_bytes(cpu(got.grads[i]), on_cpu.grads[i], what + " grad " + std::to_string(i) + ", bits");
  }
  const OpResult want = run_op(op, c, values, [&](const Tensor&) { return g64; });
  OpResult scale;
  if (op.sum_of_products) scale = run_op(op, c, magnitudes, [&](const Tensor&) { return abs(g64); });
  auto bound_of = [&](const Tensor& sum_of_products_scale, const Tensor& w) {
    return op.sum_of_products ? sum_of_products_scale : max_abs_like(w);
  };
  EXPECT_EQ(got.out.dtype(), b.dtype) << what;
  EXPECT_TRUE(got.out.device().is_cuda()) << what;
  expect_scaled(got.out, want.out, bound_of(scale.out, want.out), b.rtol, b.atol, what + " out");
  for (size_t i = 0; i < got.grads.size(); ++i) {
    ASSERT_TRUE(got.grads[i].defined()) << what << " grad " << i;
    EXPECT_EQ(got.grads[i].dtype(), b.dtype) << what;
    expect_scaled(got.grads[i], want.grads[i], bound_of(op.sum_of_products ? scale.grads[i] : Tensor(), want.grads[i]),
                  b.rtol, b.atol, what + " grad " + std::to_string(i));
  }
}

std::vector<Tensor> on_gpu(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> out;
  for (const Tensor& t : inputs) out.push_back(gpu(t));
  return out;
}

std::string describe_case(const OpEntry& op, const OpCase& c, DType dtype) {
  return str_cat(describe_case(op, c), " ", dtype_name(dtype));
}

class CudaParity : public ::testing::TestWithParam<OpEntry> {};

TEST_P(CudaParity, MatchesTheCpu) {
  MOH_REQUIRE_GPU();
  FlagsGuard flags;
  set_allow_tf32(false);
  const OpEntry& op = GetParam();
  std::vector<OpCase> cases = op.cases;
  cases.insert(cases.end(), op.large_cases.begin(), op.large_cases.end());
  uint64_t seed = 500;
  for (const ParityBound& b : op.cuda)
    for (const OpCase& c : cases)
      check_parity(op, c, b, on_gpu(op_inputs(c, b.dtype, seed += 10)), seed + 8, describe_case(op, c, b.dtype));
}

TEST_P(CudaParity, StridedInputsMatchTheCpu) {
  MOH_REQUIRE_GPU();
  FlagsGuard flags;
  set_allow_tf32(false);
  const OpEntry& op = GetParam();
  const OpCase& c = op.cases.front();
  const ParityBound& b = op.cuda.front();
  ASSERT_EQ(b.dtype, DType::Float32) << op.name << ": the first CUDA bound is float32's";
  uint64_t seed = 600;
  for (const Layout& layout : strided_layouts()) {
    const std::vector<Tensor> views = with_layout(layout, on_gpu(op_inputs(c, b.dtype, seed += 10)), seed + 5);
    ASSERT_FALSE(views[0].is_contiguous()) << layout.name;
    check_parity(op, c, b, views, seed + 8, describe_case(op, c, b.dtype) + " " + layout.name);
  }
}

INSTANTIATE_TEST_SUITE_P(OpTable, CudaParity, ::testing::ValuesIn(op_table()), op_entry_name);

}  // namespace
}  // namespace moh::test
