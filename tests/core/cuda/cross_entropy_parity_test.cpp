// CUDA vs CPU parity of the fused cross entropy, forward (loss, saved lse) and backward: every
// reduction, label smoothing, ignore_index (some rows, all rows), class counts of 1, 33, 1000 and
// 5000 (warp and block rows), non-contiguous logits, float64, bfloat16/float16, the out-of-range
// target errors (the same message as the CPU's, forward and backward), and bitwise reproducibility.
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/factory.h"
#include "core/ops.h"
#include "core/ops/checks.h"
#include "tests/core/cuda/parity.h"

namespace moh {
namespace {

using test::cpu;
using test::gpu;
using test::rand_t;

constexpr int64_t kIgnore = -100;
const Reduction kReductions[] = {Reduction::Mean, Reduction::Sum, Reduction::None};

const char* name(Reduction r) { return r == Reduction::Mean ? "mean" : r == Reduction::Sum ? "sum" : "none"; }

// Targets in [0, c), with every `ignore_every`-th row (0: none) set to kIgnore.
Tensor targets(int64_t n, int64_t c, int64_t ignore_every, uint32_t seed) {
  std::vector<int64_t> t = test::rand_index({n}, c, seed).to_vector<int64_t>();
  for (int64_t i = 0; ignore_every > 0 && i < n; i += ignore_every) t[size_t(i)] = kIgnore;
  return from_vector<int64_t>(t, {n});
}

// An upstream gradient of the loss's shape.
Tensor grad_of(const Tensor& loss, uint64_t seed) {
  return loss.dim() == 0 ? full({}, 0.75, loss.dtype()) : rand_t(loss.shape(), seed, loss.dtype());
}

// logits (CPU) and lg (their values on the GPU, maybe 16-bit or a view); the CPU reference runs in
// logits' dtype. Each backward takes its own forward's saved lse (float32 for 16-bit logits: a
// 16-bit lse would shift every probability of the GPU's backward by up to half its rounding step).
void check_ce(const Tensor& logits, const Tensor& lg, const Tensor& t, double ls, double rtol, double atol) {
  for (Reduction r : kReductions) {
    const std::string what = std::string("cross_entropy ") + name(r) + " ls " + std::to_string(ls) + " of " +
                             describe(lg);
    const CrossEntropyForward fg = cross_entropy(lg, gpu(t), ls, kIgnore, r);
    const CrossEntropyForward fc = cross_entropy(logits, t, ls, kIgnore, r);
    EXPECT_EQ(fg.loss.dtype(), lg.dtype()) << what;
    EXPECT_EQ(fg.lse.dtype(), statistic_dtype(lg.dtype())) << what;
    test::expect_close(cpu(fg.loss).to(logits.dtype()), fc.loss, rtol, atol, what + " loss");
    test::expect_close(cpu(fg.lse).to(logits.dtype()), fc.lse, rtol, atol, what + " lse");
    const Tensor g = grad_of(fc.loss, 21).to(lg.dtype());
    test::expect_close(cpu(cross_entropy_backward(gpu(g), lg, gpu(t), fg.lse, ls, kIgnore, r)).to(logits.dtype()),
                       cross_entropy_backward(g.to(logits.dtype()), logits, t, fc.lse, ls, kIgnore, r), rtol, atol,
                       what + " backward");
  }
}

TEST(CudaParityCrossEntropy, Float32) {
  MOH_REQUIRE_GPU();
  for (int64_t c : {1, 33, 1000, 5000})
    for (int64_t n : {1, 17, 64})
      for (double ls : {0.0, 0.1})
        for (int64_t ignore_every : {0, 3}) {
          const Tensor x = mul(rand_t({n, c}, uint64_t(c + n)), 4.0);
          check_ce(x, gpu(x), targets(n, c, ignore_every, uint32_t(n * c)), ls, 1e-5, 1e-6);
        }
}

TEST(CudaParityCrossEntropy, AllTargetsIgnored) {
  MOH_REQUIRE_GPU();
  const Tensor x = rand_t({5, 40}, 1), t = targets(5, 40, 1, 2);
  check_ce(x, gpu(x), t, 0.1, 1e-5, 1e-6);  // Mean: 0 / 0 = NaN on both; gradients all 0
  EXPECT_TRUE(std::isnan(cpu(cross_entropy(gpu(x), gpu(t)).loss).item<double>()));
  const Tensor g = cross_entropy_backward(gpu(full({}, 1.0)), gpu(x), gpu(t), gpu(full({5}, 0.0)));
  test::expect_equal(cpu(g), zeros({5, 40}), "gradient of ignored rows");
}

TEST(CudaParityCrossEntropy, IgnoreIndexInsideTheClassRange) {
  MOH_REQUIRE_GPU();
  const Tensor x = rand_t({64, 10}, 3), t = test::rand_index({64}, 10, 4);
  for (Reduction r : kReductions) {
    const CrossEntropyForward fg = cross_entropy(gpu(x), gpu(t), 0.05, 2, r), fc = cross_entropy(x, t, 0.05, 2, r);
    test::expect_parity_f32(cpu(fg.loss), fc.loss, std::string("ignore_index 2, ") + name(r));
    const Tensor g = grad_of(fc.loss, 5);
    test::expect_parity_f32(cpu(cross_entropy_backward(gpu(g), gpu(x), gpu(t), fg.lse, 0.05, 2, r)),
                            cross_entropy_backward(g, x, t, fc.lse, 0.05, 2, r), "backward, ignore_index 2");
  }
}

TEST(CudaParityCrossEntropy, NonContiguousLogits) {
  MOH_REQUIRE_GPU();
  const Tensor x = rand_t({33, 20}, 6);
  const Tensor lg = gpu(x.t().contiguous()).t();
  ASSERT_FALSE(lg.is_contiguous());
  check_ce(x, lg, targets(33, 20, 4, 7), 0.1, 1e-5, 1e-6);
}

TEST(CudaParityCrossEntropy, Float64) {
  MOH_REQUIRE_GPU();
  for (int64_t c : {33, 5000}) {
    const Tensor x = rand_t({9, c}, 8, DType::Float64);
    check_ce(x, gpu(x), targets(9, c, 4, 9), 0.2, 1e-12, 1e-13);
  }
}

// GPU bf16/fp16 against the CPU float32 result of the same rounded logits: rtol about two roundings
// of the type; atol for gradients near 0. With 5000 classes lse is about 9, where a bfloat16 lse
// would be off by up to 0.03 and every gradient by up to 3%.
TEST(CudaParityCrossEntropy, HalfTypes) {
  MOH_REQUIRE_GPU();
  for (const auto& [dt, rtol] : {std::pair{DType::BFloat16, 1e-2}, std::pair{DType::Float16, 2e-3}})
    for (int64_t c : {33, 5000}) {
      const Tensor xh = mul(rand_t({16, c}, 10), 3.0).to(dt);
      check_ce(xh.to(DType::Float32), gpu(xh), targets(16, c, 5, 11), 0.1, rtol, 1e-4);
    }
}

TEST(CudaParityCrossEntropy, OutOfRangeTargetSameError) {
  MOH_REQUIRE_GPU();
  const Tensor x = rand_t({6, 5}, 12), lse = full({6}, 0.0);
  for (int64_t bad : {5, 7, -1}) {
    const Tensor t = from_vector<int64_t>({0, kIgnore, bad, 1, bad + 1, 4}, {6});  // first bad: row 2
    auto message = [](const std::function<void()>& fn) {
      try {
        fn();
      } catch (const Error& e) {
        return std::string(e.what());
      }
      return std::string("no error");
    };
    const std::string want = message([&] { cross_entropy(x, t); });
    EXPECT_NE(want.find("target[2] = " + std::to_string(bad)), std::string::npos) << want;
    EXPECT_EQ(message([&] { cross_entropy(gpu(x), gpu(t)); }), want);
    const std::string want_back = message([&] { cross_entropy_backward(full({}, 1.0), x, t, lse); });
    EXPECT_NE(want_back.find("cross_entropy_backward: target[2]"), std::string::npos) << want_back;
    EXPECT_EQ(message([&] { cross_entropy_backward(gpu(full({}, 1.0)), gpu(x), gpu(t), gpu(lse)); }), want_back);
  }
}

TEST(CudaParityCrossEntropy, BitwiseReproducible) {
  MOH_REQUIRE_GPU();
  const Tensor x = gpu(rand_t({4096, 1000}, 13)), t = gpu(test::rand_index({4096}, 1000, 14));
  const CrossEntropyForward a = cross_entropy(x, t, 0.1), b = cross_entropy(x, t, 0.1);
  test::expect_same_bytes(cpu(a.loss), cpu(b.loss), "mean loss");
  test::expect_same_bytes(cpu(a.lse), cpu(b.lse), "lse");
}

}  // namespace
}  // namespace moh
