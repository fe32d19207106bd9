// The CPU drivers of the op-test table (tests/core/op_table.h), each instantiated for every entry:
// strided inputs and upstream gradients (permuted, sliced, broadcast) give the bits (or, where the
// entry says so, the values to a rounding) of their contiguous copies; float32 agrees with float64
// on the same values; float64 finite-difference gradcheck of every input (also on strided leaves,
// and with each input frozen in turn); the same bits for one and several threads (the cases that
// promise it). Each check compares the forward output and every input gradient.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <string>

#include "core/ops.h"
#include "tests/autograd/autograd_test_util.h"
#include "tests/core/nn_test_util.h"
#include "tests/core/op_table.h"
#include "tests/test_util.h"

namespace moh::test {
namespace {

std::vector<Tensor> contiguous_copies(const std::vector<Tensor>& views) {
  std::vector<Tensor> out;
  for (const Tensor& t : views) out.push_back(t.contiguous());
  return out;
}

// Every tensor of `got` holds the bits of the same tensor of `want`.
void expect_same_results(const OpResult& got, const OpResult& want, const std::string& what) {
  expect_same_bytes(got.out.contiguous(), want.out, what + " out");
  ASSERT_EQ(got.grads.size(), want.grads.size()) << what;
  for (size_t i = 0; i < got.grads.size(); ++i) {
    ASSERT_TRUE(got.grads[i].defined()) << what << " grad " << i;
    expect_same_bytes(got.grads[i].contiguous(), want.grads[i], what + " grad " + std::to_string(i));
  }
}

struct ThreadsGuard {
  int before = num_threads();
  ~ThreadsGuard() { set_num_threads(before); }
};

class OpTableTest : public ::testing::TestWithParam<OpEntry> {};
class StridedInputs : public OpTableTest {};
class Float32 : public OpTableTest {};
class Gradcheck : public OpTableTest {};
class ThreadCount : public OpTableTest {};

TEST_P(StridedInputs, MatchContiguousCopies) {
  const OpEntry& op = GetParam();
  uint64_t seed = 1;
  for (DType dtype : {DType::Float32, DType::Float64})
    for (const OpCase& c : op.cases)
      for (const Layout& layout : strided_layouts()) {
        const std::string what = str_cat(describe_case(op, c), " ", layout.name, " ", dtype_name(dtype));
        const std::vector<Tensor> views = with_layout(layout, op_inputs(c, dtype, seed += 10), seed + 5);
        const bool any_strided =
            std::any_of(views.begin(), views.end(), [](const Tensor& t) { return !t.is_contiguous(); });
        if (!any_strided) continue;  // e.g. a 1 x 1 x 1 x 1 input has no broadcast view
        Tensor grad_view;
        const OpResult strided = run_op(op, c, views, [&](const Tensor& out) {
          return grad_view = layout.make(random_like(out, seed + 8), seed + 9);
        });
        const OpResult contiguous =
            run_op(op, c, contiguous_copies(views), [&](const Tensor&) { return grad_view.contiguous(); });
        if (op.strided_rtol == 0) {
          expect_same_results(strided, contiguous, what);
          continue;
        }
        nn_test::expect_close(strided.out, contiguous.out, op.strided_rtol, what + " out");
        for (size_t i = 0; i < strided.grads.size(); ++i)
          nn_test::expect_close(strided.grads[i], contiguous.grads[i], op.strided_rtol,
                                what + " grad " + std::to_string(i));
      }
}

TEST_P(Float32, AgreesWithFloat64) {
  const OpEntry& op = GetParam();
  uint64_t seed = 100;
  for (const OpCase& c : op.cases) {
    const std::string what = describe_case(op, c);
    const std::vector<Tensor> in32 = op_inputs(c, DType::Float32, seed += 10);
    Tensor g32;
    const OpResult r32 = run_op(op, c, in32, [&](const Tensor& out) { return g32 = random_like(out, seed + 8); });
    std::vector<Tensor> in64;
    for (const Tensor& t : in32) in64.push_back(t.to(DType::Float64));
    const OpResult r64 = run_op(op, c, in64, [&](const Tensor&) { return g32.to(DType::Float64); });
    EXPECT_EQ(r32.out.dtype(), DType::Float32) << what;
    nn_test::expect_close(r32.out, r64.out, op.float32_rtol, what + " out");
    for (size_t i = 0; i < r32.grads.size(); ++i) {
      EXPECT_EQ(r32.grads[i].dtype(), DType::Float32) << what;
      nn_test::expect_close(r32.grads[i], r64.grads[i], op.float32_rtol, what + " grad " + std::to_string(i));
    }
  }
}

TEST_P(Gradcheck, EveryInputInFloat64) {
  const OpEntry& op = GetParam();
  uint64_t seed = 200;
  auto leaves = [](const std::vector<Tensor>& inputs) {
    std::vector<ag::Variable> out;
    for (const Tensor& t : inputs) out.emplace_back(t, true);
    return out;
  };
  for (const OpCase& c : op.cases) {
    SCOPED_TRACE(describe_case(op, c));
    auto f = [&](const std::vector<ag::Variable>& in) { return op.forward(in, c.args); };
    EXPECT_GRADCHECK(f, leaves(op_inputs(c, DType::Float64, seed += 10)));
  }
  const OpCase& first = op.cases.front();
  auto f = [&](const std::vector<ag::Variable>& in) { return op.forward(in, first.args); };
  for (const Layout& layout : strided_layouts()) {
    if (layout.has_stride_zero) continue;  // gradcheck perturbs its leaves in place
    SCOPED_TRACE(describe_case(op, first) + " " + layout.name + " leaves");
    const std::vector<Tensor> views = with_layout(layout, op_inputs(first, DType::Float64, seed += 10), seed + 5);
    ASSERT_FALSE(views[0].is_contiguous());
    EXPECT_GRADCHECK(f, leaves(views));
  }
  if (first.inputs.size() < 2) return;
  for (size_t frozen = 0; frozen < first.inputs.size(); ++frozen) {
    SCOPED_TRACE(describe_case(op, first) + " input " + std::to_string(frozen) + " frozen");
    std::vector<ag::Variable> in = leaves(op_inputs(first, DType::Float64, seed += 10));
    in[frozen].set_requires_grad(false);
    EXPECT_GRADCHECK(f, in);
    EXPECT_FALSE(in[frozen].grad().defined());
  }
}

TEST_P(ThreadCount, SameBitsForOneAndSeveralThreads) {
  const OpEntry& op = GetParam();
  ThreadsGuard guard;
  const int several = std::max(2, guard.before);
  uint64_t seed = 300;
  std::vector<OpCase> cases;
  for (const auto* list : {&op.large_cases, &op.cases})
    std::copy_if(list->begin(), list->end(), std::back_inserter(cases),
                 [](const OpCase& c) { return c.same_bits_for_any_thread_count; });
  if (cases.empty()) GTEST_SKIP() << op.name << " promises no thread-count independent results";
  for (const OpCase& c : cases) {
    const std::vector<Tensor> in = op_inputs(c, op.thread_count_dtype, seed += 10);
    Tensor g;
    set_num_threads(1);
    const OpResult one = run_op(op, c, in, [&](const Tensor& out) { return g = random_like(out, seed + 8); });
    set_num_threads(several);
    const OpResult many = run_op(op, c, in, [&](const Tensor&) { return g; });
    expect_same_results(many, one, describe_case(op, c) + " 1 vs " + std::to_string(several) + " threads");
  }
}

INSTANTIATE_TEST_SUITE_P(OpTable, StridedInputs, ::testing::ValuesIn(op_table()), op_entry_name);
INSTANTIATE_TEST_SUITE_P(OpTable, Float32, ::testing::ValuesIn(op_table()), op_entry_name);
INSTANTIATE_TEST_SUITE_P(OpTable, Gradcheck, ::testing::ValuesIn(op_table()), op_entry_name);
INSTANTIATE_TEST_SUITE_P(OpTable, ThreadCount, ::testing::ValuesIn(op_table()), op_entry_name);

}  // namespace
}  // namespace moh::test
