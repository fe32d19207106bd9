// conv2d and conv2d_backward in float64 against a direct seven-loop reference, over a table of
// geometries that reaches every path of the CPU kernel (strides, padding wider than the kernel's
// reach, dilation, groups, the pointwise shortcut, chunks of several samples with a partial last
// chunk); the gradients asked for and no others; every argument error. Strided operands, float32,
// gradcheck, thread-count independence and CUDA parity: the op table's conv2d entry
// (tests/core/op_table.cpp).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/factory.h"
#include "core/ops.h"
#include "tests/core/nn_test_util.h"
#include "tests/core/conv_cases.h"
#include "tests/test_util.h"

namespace moh {
namespace {

using nn_test::expect_close;
using nn_test::randn;

using conv_test::ConvCase;
using conv_test::kCases;

struct Reference {
  std::vector<double> out, grad_input, grad_weight, grad_bias;
};

// The definition, term by term: out[n, o, y, x] = b[o] + sum x[n, ci, iy, ix] w[o, c, i, j].
Reference reference(const ConvCase& k, const std::vector<double>& x, const std::vector<double>& w,
                    const std::vector<double>& b, const std::vector<double>& grad_out) {
  const Conv2dParams& p = k.p;
  const int64_t ho = conv_output_size(k.h, k.kh, p.stride_h, p.pad_h, p.dilation_h);
  const int64_t wo = conv_output_size(k.w, k.kw, p.stride_w, p.pad_w, p.dilation_w);
  const int64_t cg = k.c / p.groups, og = k.o / p.groups;
  Reference r{std::vector<double>(size_t(k.n * k.o * ho * wo)), std::vector<double>(x.size()),
              std::vector<double>(w.size()), std::vector<double>(size_t(k.o))};
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.o; ++o)
      for (int64_t oy = 0; oy < ho; ++oy)
        for (int64_t ox = 0; ox < wo; ++ox) {
          const size_t out_at = size_t(((n * k.o + o) * ho + oy) * wo + ox);
          double acc = b[size_t(o)];
          const double g = grad_out[out_at];
          r.grad_bias[size_t(o)] += g;
          for (int64_t c = 0; c < cg; ++c)
            for (int64_t i = 0; i < k.kh; ++i)
              for (int64_t j = 0; j < k.kw; ++j) {
                const int64_t iy = oy * p.stride_h - p.pad_h + i * p.dilation_h;
                const int64_t ix = ox * p.stride_w - p.pad_w + j * p.dilation_w;
                if (iy < 0 || iy >= k.h || ix < 0 || ix >= k.w) continue;
                const int64_t ci = (o / og) * cg + c;
                const size_t x_at = size_t(((n * k.c + ci) * k.h + iy) * k.w + ix);
                const size_t w_at = size_t(((o * cg + c) * k.kh + i) * k.kw + j);
                acc += x[x_at] * w[w_at];
                r.grad_input[x_at] += g * w[w_at];
                r.grad_weight[w_at] += g * x[x_at];
              }
          r.out[out_at] = acc;
        }
  return r;
}

struct Operands {
  Tensor x, w, b;
};
Operands operands(const ConvCase& k, DType dtype, uint64_t seed) {
  return {randn({k.n, k.c, k.h, k.w}, dtype, seed), randn({k.o, k.c / k.p.groups, k.kh, k.kw}, dtype, seed + 1, 0.5),
          randn({k.o}, dtype, seed + 2)};
}

TEST(Conv2d, MatchesTheDefinitionForwardAndBackward) {
  const double rtol = 1e-12;
  uint64_t seed = 10;
  for (const ConvCase& k : kCases) {
    const std::string what = k.name;
    const Operands in = operands(k, DType::Float64, seed += 4);
    const Tensor out = conv2d(in.x, in.w, in.b, k.p);
    const Tensor grad_out = randn(out.shape(), DType::Float64, seed + 3);
    const Reference r = reference(k, in.x.to_vector<double>(), in.w.to_vector<double>(), in.b.to_vector<double>(),
                                  grad_out.to_vector<double>());
    expect_close(out, r.out, rtol, what + " out");
    const Conv2dBackward g = conv2d_backward(grad_out, in.x, in.w, k.p);
    ASSERT_EQ(g.grad_input.shape(), in.x.shape()) << what;
    ASSERT_EQ(g.grad_weight.shape(), in.w.shape()) << what;
    expect_close(g.grad_input, r.grad_input, rtol, what + " grad_input");
    expect_close(g.grad_weight, r.grad_weight, rtol, what + " grad_weight");
    expect_close(g.grad_bias, r.grad_bias, rtol, what + " grad_bias");
    const std::vector<double> no_bias(size_t(k.o), 0.0);
    expect_close(conv2d(in.x, in.w, Tensor(), k.p),
                 reference(k, in.x.to_vector<double>(), in.w.to_vector<double>(), no_bias,
                           grad_out.to_vector<double>()).out,
                 rtol, what + " without bias");
  }
}

TEST(Conv2d, ComputesOnlyTheGradientsAskedFor) {
  const ConvCase& k = kCases[0];
  const Operands in = operands(k, DType::Float64, 5);
  const Tensor g = randn(conv2d(in.x, in.w, in.b, k.p).shape(), DType::Float64, 6);
  const Conv2dBackward all = conv2d_backward(g, in.x, in.w, k.p);
  const Conv2dBackward weight_only = conv2d_backward(g, in.x, in.w, k.p, {false, true, false});
  EXPECT_FALSE(weight_only.grad_input.defined());
  EXPECT_FALSE(weight_only.grad_bias.defined());
  EXPECT_EQ(weight_only.grad_weight.to_vector<double>(), all.grad_weight.to_vector<double>());
  const Conv2dBackward input_only = conv2d_backward(g, in.x, in.w, k.p, {true, false, false});
  EXPECT_FALSE(input_only.grad_weight.defined());
  EXPECT_EQ(input_only.grad_input.to_vector<double>(), all.grad_input.to_vector<double>());
}

TEST(Conv2d, AnEmptyBatchGivesEmptyOutputAndZeroParameterGradients) {
  const Tensor x = zeros({0, 2, 5, 5}, DType::Float32);
  const Tensor w = randn({3, 2, 3, 3}, DType::Float32, 1), b = randn({3}, DType::Float32, 2);
  const Tensor out = conv2d(x, w, b, {});
  EXPECT_EQ(out.shape(), Shape({0, 3, 3, 3}));
  const Conv2dBackward g = conv2d_backward(zeros({0, 3, 3, 3}, DType::Float32), x, w, {});
  EXPECT_EQ(g.grad_weight.to_vector<float>(), std::vector<float>(54, 0.0f));
  EXPECT_EQ(g.grad_bias.to_vector<float>(), std::vector<float>(3, 0.0f));
}

TEST(Conv2d, RejectsBadArgumentsNamingThem) {
  const Tensor x = randn({2, 4, 6, 6}, DType::Float32, 1), w = randn({6, 4, 3, 3}, DType::Float32, 2);
  const Tensor b = randn({6}, DType::Float32, 3);
  test::expect_error([&] { conv2d(x.reshape({8, 6, 6}), w, b, {}); }, {"conv2d: ", "expected the input as [N, C, H, W]"});
  test::expect_error([&] { conv2d(x, w.reshape({6, 36, 1}), b, {}); }, {"conv2d: ", "expected the weight as [O, C / groups, KH, KW]"});
  test::expect_error([&] { conv2d(x, randn({6, 3, 3, 3}, DType::Float32, 4), b, {}); }, {"conv2d: ", "expects 3 input channels"});
  Conv2dParams groups3;
  groups3.groups = 3;
  test::expect_error([&] { conv2d(x, w, b, groups3); }, {"conv2d: ", "groups 3 must divide"});
  Conv2dParams stride0;
  stride0.stride_w = 0;
  test::expect_error([&] { conv2d(x, w, b, stride0); }, {"conv2d: ", "strides, dilations and groups must be >= 1"});
  Conv2dParams negative_pad;
  negative_pad.pad_h = -1;
  test::expect_error([&] { conv2d(x, w, b, negative_pad); }, {"conv2d: ", "padding >= 0"});
  test::expect_error([&] { conv2d(x, randn({6, 4, 7, 3}, DType::Float32, 5), b, {}); }, {"conv2d: ", "does not fit the input"});
  test::expect_error([&] { conv2d(x, w.to(DType::Float64), b, {}); }, {"conv2d: ", "must have the dtype and device of the input"});
  test::expect_error([&] { conv2d(x, w, randn({5}, DType::Float32, 6), {}); }, {"conv2d: ", "expected the bias as [6]"});
  test::expect_error([&] { conv2d(x.to(DType::Int64), w, b, {}); }, {"conv2d: ", "expected input to be float32 or float64"});
  test::expect_error([&] { conv2d_backward(randn({2, 6, 4, 5}, DType::Float32, 7), x, w, {}); },
                     {"conv2d_backward", "expected grad_out [2, 6, 4, 4]"});
}

}  // namespace
}  // namespace moh
