// Tensor construction, views (view/reshape/permute/narrow/slice/select/squeeze/expand), copies,
// dtype conversion and their errors, checked element by element against index arithmetic.
#include <gtest/gtest.h>

#include "core/factory.h"
#include "core/ops.h"

namespace moh {
namespace {

Tensor iota(const Shape& shape, DType dtype = DType::Float32) {
  return arange(0.0, double(shape_numel(shape)), 1.0, dtype).view(shape);
}

TEST(TensorViews, ContiguousLayoutAndItem) {
  Tensor t = iota({2, 3, 4});
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_TRUE(t.is_contiguous());
  EXPECT_EQ(t.numel(), 24);
  EXPECT_EQ(t.select(0, 1).select(0, 2).select(0, 3).item<float>(), 23.0f);
}

TEST(TensorViews, PermuteSharesStorageAndIndexesCorrectly) {
  Tensor t = iota({2, 3, 4});
  Tensor p = t.permute({2, 0, 1});
  EXPECT_TRUE(p.shares_storage(t));
  EXPECT_FALSE(p.is_contiguous());
  auto v = p.to_vector<float>();
  for (int64_t k = 0; k < 4; ++k)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(v[size_t(k * 6 + i * 3 + j)], float(i * 12 + j * 4 + k));
  Tensor c = p.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FALSE(c.shares_storage(t));
  EXPECT_EQ(c.to_vector<float>(), v);
}

TEST(TensorViews, ViewRejectsIncompatibleStridesReshapeCopies) {
  Tensor t = iota({4, 6}).t();  // [6, 4], column-major
  EXPECT_THROW(t.view({24}), Error);
  Tensor r = t.reshape({24});
  EXPECT_FALSE(r.shares_storage(t));
  EXPECT_EQ(r.to_vector<float>()[1], 6.0f);
  // Splitting a dim of a transposed tensor is still a view.
  Tensor s = t.view({2, 3, 4});
  EXPECT_TRUE(s.shares_storage(t));
  EXPECT_EQ(s.select(0, 1).select(0, 0).select(0, 2).item<float>(), 2 * 6 + 3);
}

TEST(TensorViews, ViewInfersMinusOneAndRejectsBadSizes) {
  Tensor t = iota({2, 3, 4});
  EXPECT_EQ(t.view({-1, 4}).shape(), (Shape{6, 4}));
  EXPECT_THROW(t.view({-1, -1}), Error);
  EXPECT_THROW(t.view({5, -1}), Error);
  EXPECT_THROW(t.view({7, 4}), Error);
}

TEST(TensorViews, NarrowSliceSelect) {
  Tensor t = iota({5, 4});
  Tensor n = t.narrow(0, 1, 3);
  EXPECT_EQ(n.shape(), (Shape{3, 4}));
  EXPECT_EQ(n.to_vector<float>()[0], 4.0f);
  Tensor s = t.slice(1, 1, 4, 2);  // columns 1, 3
  EXPECT_EQ(s.shape(), (Shape{5, 2}));
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{1, 3, 5, 7, 9, 11, 13, 15, 17, 19}));
  EXPECT_EQ(t.slice(0, -2, 100).shape(), (Shape{2, 4}));
  EXPECT_EQ(t.select(1, -1).to_vector<float>(), (std::vector<float>{3, 7, 11, 15, 19}));
  EXPECT_THROW(t.narrow(0, 3, 3), Error);
  EXPECT_THROW(t.select(0, 5), Error);
  EXPECT_THROW(t.select(2, 0), Error);
}

TEST(TensorViews, SqueezeUnsqueezeFlatten) {
  Tensor t = iota({3, 1, 2});
  EXPECT_EQ(t.squeeze(1).shape(), (Shape{3, 2}));
  EXPECT_EQ(t.squeeze(0).shape(), (Shape{3, 1, 2}));
  EXPECT_EQ(t.unsqueeze(0).shape(), (Shape{1, 3, 1, 2}));
  EXPECT_EQ(t.unsqueeze(-1).shape(), (Shape{3, 1, 2, 1}));
  EXPECT_TRUE(t.unsqueeze(3).is_contiguous());
  EXPECT_EQ(iota({2, 3, 4}).flatten(1).shape(), (Shape{2, 12}));
}

TEST(TensorViews, ExpandBroadcastsWithZeroStride) {
  Tensor t = iota({3, 1});
  Tensor e = t.expand({2, 3, 4});
  EXPECT_EQ(e.strides(), (std::vector<int64_t>{0, 1, 0}));
  auto v = e.to_vector<float>();
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(v[size_t(b * 12 + i * 4 + j)], float(i));
  EXPECT_THROW(t.expand({3, 2, 4}), Error);
  Tensor w = e;
  EXPECT_THROW(fill_(w, 1.0), Error);
}

TEST(TensorViews, CopyBroadcastsAndCasts) {
  Tensor dst = zeros({2, 3}, DType::Int64);
  dst.copy_(from_vector<float>({1.9f, -2.7f, 3.0f}, {3}));
  EXPECT_EQ(dst.to_vector<int64_t>(), (std::vector<int64_t>{1, -2, 3, 1, -2, 3}));
  Tensor b = from_vector<float>({0.0f, 2.0f}, {2}).to(DType::Bool);
  EXPECT_EQ(b.to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
  EXPECT_THROW(dst.copy_(zeros({4})), Error);
}

// contiguous() of permuted and narrowed views, small and large enough to be split across threads (whose
// chunks then start partway through a line of the second-innermost dim), against index arithmetic.
TEST(TensorViews, StridedCopiesMatchIndexArithmetic) {
  const Shape shape{5, 7, 33, 97};
  const Tensor source = iota(shape);
  for (const std::vector<int64_t>& order : std::vector<std::vector<int64_t>>{
           {0, 2, 1, 3}, {3, 1, 0, 2}, {1, 0, 3, 2}, {2, 3, 0, 1}}) {
    for (const int64_t first : {int64_t(1), shape[0]}) {  // one outer slice (serial) and all (threaded)
      const Tensor view = source.narrow(0, 0, first).narrow(3, 3, 90).permute(order);
      const Tensor copy = view.contiguous();
      ASSERT_TRUE(copy.is_contiguous());
      const float* got = copy.data<float>();
      const Shape& s = view.shape();
      int64_t flat = 0, wrong = 0;
      for (int64_t a = 0; a < s[0]; ++a)
        for (int64_t b = 0; b < s[1]; ++b)
          for (int64_t c = 0; c < s[2]; ++c)
            for (int64_t d = 0; d < s[3]; ++d, ++flat) {
              const int64_t i[4] = {a, b, c, d};
              int64_t at[4];
              for (int k = 0; k < 4; ++k) at[order[size_t(k)]] = i[k];
              const float want = float(((at[0] * shape[1] + at[1]) * shape[2] + at[2]) * shape[3] + at[3] + 3);
              wrong += got[flat] != want;
            }
      EXPECT_EQ(wrong, 0) << "order " << order[0] << order[1] << order[2] << order[3] << ", first " << first;
    }
  }
}

TEST(TensorViews, AllDtypesRoundTripThroughDouble) {
  for (DType t : {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16, DType::Int32, DType::Int64,
                  DType::UInt8}) {
    Tensor x = arange(0.0, 10.0, 1.0, t);
    EXPECT_EQ(x.dtype(), t);
    EXPECT_EQ(x.to_vector<double>()[7], 7.0) << dtype_name(t);
  }
}

TEST(TensorViews, FactoriesAndPrinting) {
  Tensor f = full({2, 2}, 2.5);
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>(4, 2.5f)));
  EXPECT_EQ(arange(0.0, 1.0, 0.25, DType::Float64).to_vector<double>(), (std::vector<double>{0, 0.25, 0.5, 0.75}));
  EXPECT_EQ(scalar_tensor(3).dim(), 0);
  std::string s = iota({2, 2}).str();
  EXPECT_NE(s.find("[[0, 1],"), std::string::npos) << s;
  EXPECT_NE(s.find("float32[2, 2] on cpu"), std::string::npos) << s;
  EXPECT_THROW(from_vector<float>({1, 2, 3}, {2, 2}), Error);
  EXPECT_THROW(Tensor::empty({2, -1}), Error);
  EXPECT_THROW(zeros({2}, DType::Float32, Device::cuda(0)), Error);
}

TEST(TensorViews, TypedAccessChecksDtype) {
  Tensor t = zeros({2}, DType::Float32);
  EXPECT_THROW(t.data<double>(), Error);
  EXPECT_THROW(Tensor().raw_data(), Error);
}

TEST(Allocator, TracksCurrentAndPeakBytes) {
  Allocator& a = cpu_allocator();
  a.reset_peak();
  int64_t before = a.stats().current_bytes;
  {
    Tensor t = Tensor::empty({1024}, DType::Float64);
    EXPECT_EQ(a.stats().current_bytes, before + 8192);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % kCpuAlignment, 0u);
  }
  EXPECT_EQ(a.stats().current_bytes, before);
  EXPECT_GE(a.stats().peak_bytes, before + 8192);
}

}  // namespace
}  // namespace moh

namespace moh {
namespace {

TEST(Device, ParsesAndReportsCudaAvailability) {
  EXPECT_EQ(Device::parse("cpu"), Device::cpu());
  EXPECT_EQ(Device::parse("cuda:3"), Device::cuda(3));
  EXPECT_EQ(Device::parse("cuda").str(), "cuda:0");
  EXPECT_THROW(Device::parse("cuda:x"), Error);
  EXPECT_THROW(Device::parse("gpu"), Error);
  if (!cuda_compiled()) EXPECT_EQ(cuda_device_count(), 0);
  EXPECT_GE(cuda_device_count(), 0);
}

}  // namespace
}  // namespace moh
