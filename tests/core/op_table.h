// The op-test table: one entry per differentiable op, which generic drivers check for every entry —
// strided inputs against contiguous copies, float32 against float64, float64 finite-difference
// gradcheck of every input, thread-count independence (tests/core/test_op_table.cpp), and CUDA
// against the CPU (tests/core/cuda/op_table_parity_test.cpp). Each driver x entry is its own test,
// e.g. OpTable/StridedInputs.MatchContiguousCopies/conv2d.
//
// To add an op: append an OpEntry to op_table() in op_table.cpp: a name ([A-Za-z0-9_], it ends the
// test names), its forward over Variables and integer arguments, small cases (every check, including
// a finite-difference gradcheck per input element, so keep them to a few hundred elements) and large
// ones (thread-count and CUDA checks only: sizes that reach the parallel and multi-block paths), its
// float32 and strided-layout tolerances and its CUDA bounds per dtype (see conv2d_entry() for one).
// Hand-computed values and argument errors stay in the op's own test file.
//
// Inputs are uniform in [-1, 1); an op that needs another range (a positive scale, ...) maps them in
// its forward. Every input is differentiable; the upstream gradient is random too.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "autograd/autograd.h"
#include "core/tensor.h"

namespace moh::test {

struct OpCase {
  std::string name;           // says what the case reaches (in failure messages)
  std::vector<Shape> inputs;  // one shape per input Variable
  std::vector<int64_t> args;  // the op's integer arguments (geometry), read by the entry's forward
  bool same_bits_for_any_thread_count = true;  // what the op promises for this case
};

using OpForward =
    std::function<ag::Variable(const std::vector<ag::Variable>& inputs, const std::vector<int64_t>& args)>;

// CUDA result vs the CPU float64 result on the same (rounded) values:
// |got - want| <= rtol * scale + atol.
struct ParityBound {
  DType dtype;
  double rtol, atol;
};

struct OpEntry {
  std::string name;
  OpForward forward;
  std::vector<OpCase> cases;        // every check
  std::vector<OpCase> large_cases;  // thread-count and CUDA checks only
  // The dtype the thread-count check runs in: the one whose CPU path makes the promise.
  DType thread_count_dtype = DType::Float32;
  double float32_rtol;              // float32 vs float64 on the same values (nn_test::expect_close)
  // Strided inputs vs contiguous copies: 0 for the same bits; else the rtol of nn_test::expect_close
  // (a sum whose order follows the memory layout rounds differently).
  double strided_rtol;
  // Every output and gradient is a sum of products of inputs (conv, pooling): the CUDA bound's scale
  // is then the same op on |inputs| and |upstream gradient|, per element; otherwise max |want|.
  bool sum_of_products;
  std::vector<ParityBound> cuda;  // the dtypes the CUDA check runs, with their bounds
  bool cuda_same_bits;            // float32/float64 on CUDA give the CPU op's bits in the same dtype, too
};

const std::vector<OpEntry>& op_table();

// The forward output and the gradient of every input (undefined where none reached it).
struct OpResult {
  Tensor out;
  std::vector<Tensor> grads;
};

// Runs entry.forward on leaves holding `inputs`, then backward with grad_out = upstream(out).
OpResult run_op(const OpEntry& entry, const OpCase& c, const std::vector<Tensor>& inputs,
                const std::function<Tensor(const Tensor& out)>& upstream);

// "conv2d (3x3 same): [2, 3, 7, 6] [4, 3, 3, 3] [4]", for failure messages.
std::string describe_case(const OpEntry& op, const OpCase& c);

// The case's inputs: uniform in [-1, 1) in float64 from seeds seed, seed + 1, ..., then cast to dtype.
std::vector<Tensor> op_inputs(const OpCase& c, DType dtype, uint64_t seed);

// A random upstream gradient like out (uniform in [-1, 1), drawn in float64 and cast to out's dtype).
Tensor random_like(const Tensor& out, uint64_t seed);

// A non-contiguous view shaped like t (on t's device): t itself when the layout does not apply to it.
struct Layout {
  const char* name;
  Tensor (*make)(const Tensor& t, uint64_t seed);
  bool has_stride_zero;  // repeats elements (no leaf for a finite-difference gradcheck)
};
// permuted (t's values, memory in reversed dim order), sliced (new values: every other element of a
// tensor twice as large along every dim), broadcast (t's first slice along its first dim longer
// than 1, repeated along it with stride 0).
const std::vector<Layout>& strided_layouts();

// layout.make of each input, with seeds seed, seed + 1, ...
std::vector<Tensor> with_layout(const Layout& layout, const std::vector<Tensor>& inputs, uint64_t seed);

// For gtest: test names end with the entry's name; parameters print as it.
std::string op_entry_name(const ::testing::TestParamInfo<OpEntry>& info);
void PrintTo(const OpEntry& entry, std::ostream* os);

}  // namespace moh::test
