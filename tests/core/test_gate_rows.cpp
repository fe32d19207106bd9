// gate_rows against the ops it replaces in MoH's sparse execution (index_select of the gates, mul, and
// for the scattered form index_add into zero rows), forward and both gradients, in float64 and float32;
// an empty row set; and the input checks (a repeated or out-of-range pair, shapes, dtypes). The generic
// checks (gradcheck, float32, thread count, CUDA parity) run from the op table (tests/core/op_table.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "autograd/autograd.h"
#include "core/factory.h"
#include "core/ops.h"
#include "core/random.h"
#include "tests/core/nn_test_util.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using ag::Variable;

// `rows` distinct pairs of [0, pairs) in a random order.
Tensor distinct_index(int64_t rows, int64_t pairs, uint64_t seed) {
  std::vector<int64_t> all(static_cast<size_t>(pairs));
  std::iota(all.begin(), all.end(), int64_t(0));
  Generator gen(seed);
  const std::vector<double> keys = uniform({pairs}, 0, 1, gen, DType::Float64).to_vector<double>();
  std::sort(all.begin(), all.end(), [&](int64_t a, int64_t b) { return keys[size_t(a)] < keys[size_t(b)]; });
  all.resize(size_t(rows));
  return from_vector(all, {rows}, DType::Int64);
}

// The composed ops the layer used before gate_rows.
Variable composed(const Variable& rows, const Variable& gates, const Tensor& index, bool scatter) {
  Variable gated = ag::mul(rows, ag::unsqueeze(ag::index_select(gates, 0, index), 1));
  if (!scatter) return gated;
  return ag::index_add(Variable(zeros({gates.size(0), rows.size(1)}, rows.dtype())), 0, index, gated);
}

void check_against_composed(DType dtype, bool scatter, double rtol, int64_t r = 37, int64_t d = 24, int64_t p = 53) {
  SCOPED_TRACE(str_cat(dtype_name(dtype), scatter ? " scattered" : " in row order", " ", r, " of ", p, " pairs"));
  const Tensor x = test::rand_t({r, d}, 1, dtype), g = test::rand_t({p}, 2, dtype);
  const Tensor index = distinct_index(r, p, 3);
  const Tensor up = test::rand_t({scatter ? p : r, d}, 4, dtype);
  Variable xa(x, true), ga(g, true), xb(x, true), gb(g, true);
  const Variable fused = ag::gate_rows(xa, ga, index, scatter);
  const Tensor fused_out = fused.data();
  ag::backward(ag::sum(ag::mul(fused, Variable(up))));  // (backward clears the tape: one graph at a time)
  const Variable want = composed(xb, gb, index, scatter);
  nn_test::expect_close(fused_out, want.data(), rtol, "forward", 0);
  ag::backward(ag::sum(ag::mul(want, Variable(up))));
  nn_test::expect_close(xa.grad(), xb.grad(), rtol, "grad rows", 0);
  nn_test::expect_close(ga.grad(), gb.grad(), rtol, "grad gates", 1e-6);
}

TEST(GateRows, MatchesTheComposedOps) {
  for (bool scatter : {false, true}) {
    check_against_composed(DType::Float64, scatter, 1e-14);
    check_against_composed(DType::Float32, scatter, 1e-6);
  }
}

// Sizes above the parallel threshold, on thread counts that split the pairs unevenly (the scattered form
// hands each thread a range of output pairs, the rest of the op a range of rows).
TEST(GateRows, LargeInputsMatchTheComposedOpsOnAnyThreadCount) {
  const int before = num_threads();
  for (int threads : {1, 2, 3}) {
    SCOPED_TRACE(str_cat(threads, " threads"));
    set_num_threads(threads);
    for (bool scatter : {false, true}) check_against_composed(DType::Float32, scatter, 1e-6, 3001, 24, 4099);
  }
  set_num_threads(before);
}

TEST(GateRows, ScatteredRowsOfUnnamedPairsAreZeroAndTheirGatesGetNoGradient) {
  const Tensor x = from_vector(std::vector<double>{1, 2, 3, 4}, {2, 2}, DType::Float64);
  const Tensor g = from_vector(std::vector<double>{10, 20, 30}, {3}, DType::Float64);
  const Tensor index = from_vector(std::vector<int64_t>{2, 0}, {2}, DType::Int64);
  nn_test::expect_close(gate_rows(x, g, index, true), std::vector<double>{30, 40, 0, 0, 30, 60}, 0, "scattered");
  nn_test::expect_close(gate_rows(x, g, index, false), std::vector<double>{30, 60, 30, 40}, 0, "in row order");
  const Tensor up = from_vector(std::vector<double>{1, 1, 5, 5, 1, -1}, {3, 2}, DType::Float64);
  const GateRowsBackward b = gate_rows_backward(up, x, g, index, true);
  nn_test::expect_close(b.grad_rows, std::vector<double>{30, -30, 10, 10}, 0, "grad rows");
  nn_test::expect_close(b.grad_gates, std::vector<double>{7, 0, -1}, 0, "grad gates (pair 1 unnamed)");
}

TEST(GateRows, NoRows) {
  const Tensor x = zeros({0, 4}, DType::Float32), g = test::rand_t({5}, 7);
  const Tensor index = Tensor::empty({0}, DType::Int64, Device::cpu());
  nn_test::expect_close(gate_rows(x, g, index, true), zeros({5, 4}, DType::Float32), 0, "every pair unnamed");
  EXPECT_EQ(gate_rows(x, g, index, false).shape(), Shape({0, 4}));
  const GateRowsBackward b = gate_rows_backward(test::rand_t({5, 4}, 8), x, g, index, true);
  nn_test::expect_close(b.grad_gates, zeros({5}, DType::Float32), 0, "no gate named");
}

TEST(GateRows, InputChecksNameWhatIsWrong) {
  const Tensor x = test::rand_t({3, 2}, 1), g = test::rand_t({4}, 2);
  auto idx = [](std::vector<int64_t> v) { return from_vector(v, {int64_t(v.size())}, DType::Int64); };
  test::expect_error([&] { gate_rows(x, g, idx({1, 3, 1}), true); }, {"gate_rows", "index holds 1 more than once"});
  test::expect_error([&] { gate_rows(x, g, idx({0, 4, 1}), false); }, {"gate_rows", "index[1] = 4", "out of range"});
  test::expect_error([&] { gate_rows(x, g, idx({0, 1}), false); }, {"gate_rows", "index [R] = [3]"});
  test::expect_error([&] { gate_rows(x, g, from_vector(std::vector<int32_t>{0, 1, 2}, {3}, DType::Int32), false); },
                     {"gate_rows", "int64 index"});
  test::expect_error([&] { gate_rows(x, g.to(DType::Float64), idx({0, 1, 2}), false); }, {"gate_rows", "gates [P]"});
  test::expect_error([&] { gate_rows(x.reshape({6}), g, idx({0, 1, 2}), false); }, {"gate_rows", "rows [R, D]"});
  test::expect_error([&] { gate_rows(test::rand_t({5, 2}, 3), g, idx({0, 1, 2, 3, 0}), true); },
                     {"gate_rows", "5 rows cannot name distinct pairs among 4 gates"});
  test::expect_error([&] { gate_rows_backward(test::rand_t({3, 2}, 4), x, g, idx({0, 1, 2}), true); },
                     {"gate_rows_backward", "grad_out [4, 2]"});
}

}  // namespace
}  // namespace moh
