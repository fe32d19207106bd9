// Golden tests against PyTorch 1.13: fixtures made by tests/reference/make_fixtures.py (read via
// MOH_FIXTURE_DIR) hold inputs, outputs and autograd gradients for a fixed upstream gradient.
// Forward ops and backward kernels must match to 1e-5 relative in float32 and 1e-10 in float64
// (see nn_test_util.h for the closeness rule). Also checks the Python-written files load here.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/factory.h"
#include "core/io/safetensors.h"
#include "core/ops.h"
#include "tests/core/golden_fixture.h"
#include "tests/core/nn_test_util.h"

namespace moh {
namespace {

using nn_test::expect_close;

using golden::kPrefixes;
using golden::load;
using golden::tol;

TEST(GoldenTorch, FixturesLoadWithTheirMetadata) {
  for (const char* family : {"softmax", "layer_norm", "rms_norm", "cross_entropy", "gelu", "matmul"}) {
    EXPECT_EQ(load_safetensors_metadata(golden::fixture_path(family)).at("generator"),
              "tests/reference/make_fixtures.py");
    int64_t f32 = 0, f64 = 0;
    for (const auto& [name, t] : load(family).tensors) {
      if (name.starts_with("f32.")) f32 += t.dtype() == DType::Float32 ? 1 : 1000;
      if (name.starts_with("f64.")) f64 += t.dtype() == DType::Float64 ? 1 : 1000;
    }
    EXPECT_TRUE(f32 > 0 && f32 == f64) << family << ": " << f32 << " float32 and " << f64 << " float64 tensors";
  }
}

TEST(GoldenTorch, Softmax) {
  golden::Fixture f = load("softmax");
  for (std::string p : kPrefixes)
    for (int64_t dim : {1, 2}) {
      const std::string d = ".dim" + std::to_string(dim);
      Tensor x = f[p + ".x"], g = f[p + ".grad_out"];
      expect_close(softmax(x, dim), f[p + ".softmax" + d + ".out"], tol(p), p + " softmax" + d);
      expect_close(log_softmax(x, dim), f[p + ".log_softmax" + d + ".out"], tol(p), p + " log_softmax" + d);
      expect_close(softmax_backward(g, f[p + ".softmax" + d + ".out"], dim), f[p + ".softmax" + d + ".grad_x"],
                   tol(p), p + " softmax_backward" + d);
      expect_close(log_softmax_backward(g, f[p + ".log_softmax" + d + ".out"], dim),
                   f[p + ".log_softmax" + d + ".grad_x"], tol(p), p + " log_softmax_backward" + d);
    }
}

TEST(GoldenTorch, LayerNorm) {
  golden::Fixture f = load("layer_norm");
  for (std::string p : kPrefixes) {
    Tensor x = f[p + ".x"], w = f[p + ".weight"], b = f[p + ".bias"], g = f[p + ".grad_out"];
    NormForward fw = layer_norm(x, w, b, 1e-5);
    expect_close(fw.out, f[p + ".affine.out"], tol(p), p + " layer_norm out");
    expect_close(fw.mean, f[p + ".mean"], tol(p), p + " layer_norm mean");
    expect_close(fw.rstd, f[p + ".rstd"], tol(p), p + " layer_norm rstd");
    NormBackward bw = layer_norm_backward(g, x, fw, w, true);
    expect_close(bw.grad_x, f[p + ".affine.grad_x"], tol(p), p + " layer_norm grad_x");
    expect_close(bw.grad_weight, f[p + ".affine.grad_weight"], tol(p), p + " layer_norm grad_weight");
    expect_close(bw.grad_bias, f[p + ".affine.grad_bias"], tol(p), p + " layer_norm grad_bias");
    NormForward plain = layer_norm(x, Tensor(), Tensor(), 1e-5);
    expect_close(plain.out, f[p + ".plain.out"], tol(p), p + " layer_norm plain out");
    expect_close(layer_norm_backward(g, x, plain, Tensor(), false).grad_x, f[p + ".plain.grad_x"], tol(p),
                 p + " layer_norm plain grad_x");
  }
}

TEST(GoldenTorch, RmsNorm) {
  golden::Fixture f = load("rms_norm");
  for (std::string p : kPrefixes) {
    Tensor x = f[p + ".x"], w = f[p + ".weight"], g = f[p + ".grad_out"];
    NormForward fw = rms_norm(x, w, 1e-6);
    expect_close(fw.out, f[p + ".weighted.out"], tol(p), p + " rms_norm out");
    expect_close(fw.rstd, f[p + ".rstd"], tol(p), p + " rms_norm rstd");
    NormBackward bw = rms_norm_backward(g, x, fw, w);
    expect_close(bw.grad_x, f[p + ".weighted.grad_x"], tol(p), p + " rms_norm grad_x");
    expect_close(bw.grad_weight, f[p + ".weighted.grad_weight"], tol(p), p + " rms_norm grad_weight");
    NormForward plain = rms_norm(x, Tensor(), 1e-6);
    expect_close(plain.out, f[p + ".plain.out"], tol(p), p + " rms_norm plain out");
    expect_close(rms_norm_backward(g, x, plain, Tensor()).grad_x, f[p + ".plain.grad_x"], tol(p),
                 p + " rms_norm plain grad_x");
  }
}

TEST(GoldenTorch, CrossEntropy) {
  golden::Fixture f = load("cross_entropy");
  Tensor target = f["target"];
  ASSERT_EQ(target.to_vector<int64_t>()[1], -100);
  for (std::string p : kPrefixes)
    for (double ls : {0.0, 0.1})
      for (auto [red, name] : {std::pair{Reduction::Mean, "mean"}, {Reduction::Sum, "sum"}, {Reduction::None, "none"}}) {
        const std::string key = p + (ls == 0.0 ? ".ls0.0." : ".ls0.1.") + name;
        Tensor logits = f[p + ".logits"];
        CrossEntropyForward fw = cross_entropy(logits, target, ls, -100, red);
        expect_close(fw.loss, f[key + ".loss"], tol(p), key + " loss");
        expect_close(cross_entropy_backward(f[key + ".grad_loss"], logits, target, fw.lse, ls, -100, red),
                     f[key + ".grad_logits"], tol(p), key + " grad_logits");
      }
}

TEST(GoldenTorch, Gelu) {
  golden::Fixture f = load("gelu");
  for (std::string p : kPrefixes)
    for (auto [approx, name] : {std::pair{GeluApprox::None, "none"}, {GeluApprox::Tanh, "tanh"}}) {
      Tensor x = f[p + ".x"];
      expect_close(gelu(x, approx), f[p + "." + name + ".out"], tol(p), p + " gelu " + name);
      expect_close(gelu_backward(f[p + ".grad_out"], x, approx), f[p + "." + name + ".grad_x"], tol(p),
                   p + " gelu_backward " + name);
    }
}

TEST(GoldenTorch, Matmul) {
  golden::Fixture f = load("matmul");
  for (std::string p : kPrefixes) {
    // mm1: [3, 4, 5] @ (transposed) [5, 6], the 2-D operand broadcast over the batch.
    Tensor a = f[p + ".mm1.a"], b = f[p + ".mm1.bt"].t(), g = f[p + ".mm1.grad_out"];
    expect_close(matmul(a, b), f[p + ".mm1.out"], tol(p), p + " mm1 out");
    expect_close(matmul(g, b.t()), f[p + ".mm1.grad_a"], tol(p), p + " mm1 grad_a");
    expect_close(matmul(a.reshape({12, 5}).t(), g.reshape({12, 6})), f[p + ".mm1.grad_b"], tol(p), p + " mm1 grad_b");
    // mm2: (transposed) [2, 1, 4, 5] @ [3, 5, 6] -> [2, 3, 4, 6], batch dims broadcast both ways.
    a = f[p + ".mm2.at"].transpose(-2, -1);
    b = f[p + ".mm2.b"];
    g = f[p + ".mm2.grad_out"];
    expect_close(matmul(a, b), f[p + ".mm2.out"], tol(p), p + " mm2 out");
    expect_close(sum(matmul(g, b.transpose(-2, -1)), {1}, true), f[p + ".mm2.grad_a"], tol(p), p + " mm2 grad_a");
    expect_close(sum(matmul(a.transpose(-2, -1), g), {0}), f[p + ".mm2.grad_b"], tol(p), p + " mm2 grad_b");
  }
}

}  // namespace
}  // namespace moh
