// InMemoryImageSource: normalisation, the crop/flip augmentation against a naive reference, the
// determinism and resume contract of the training order, limits, and input checks.
#include <gtest/gtest.h>

#include <cmath>

#include "core/factory.h"
#include "data/epoch_sampler.h"
#include "data/memory_image_source.h"
#include "tests/test_util.h"

namespace moh {
namespace {

// n images of side h whose pixels encode (sample, y, x) so any misplaced pixel shows; labels i % 10.
ImageDataset pattern_dataset(int64_t n, int64_t h) {
  ImageDataset d;
  d.images = Tensor::empty({n, h, h}, DType::UInt8);
  d.labels = Tensor::empty({n}, DType::Int64);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t p = 0; p < h * h; ++p) d.images.data<uint8_t>()[i * h * h + p] = uint8_t((i * 37 + p * 3 + 1) % 251);
    d.labels.data<int64_t>()[i] = i % 10;
  }
  for (int i = 0; i < 10; ++i) d.class_names.push_back("c" + std::to_string(i));
  return d;
}

float normalised(uint8_t v, const InMemoryAugment& a) { return float((double(v) / 255.0 - a.mean) / a.std); }

TEST(InMemoryImageSource, EvalBatchesAreTheNormalisedSplitInOrder) {
  InMemoryAugment aug;
  ImageDataset eval = pattern_dataset(7, 5);
  InMemoryImageSource src(pattern_dataset(20, 5), eval, aug, 1);
  std::vector<int64_t> sizes;
  int64_t next = 0;
  src.for_each_eval_batch(0, 7, 3, [&](const ImageBatch& b) {
    sizes.push_back(b.labels.shape()[0]);
    ASSERT_EQ(b.images.shape(), (Shape{b.labels.shape()[0], 1, 5, 5}));
    for (int64_t i = 0; i < b.labels.shape()[0]; ++i, ++next) {
      EXPECT_EQ(b.labels.data<int64_t>()[i], next % 10);
      for (int64_t p = 0; p < 25; ++p)
        EXPECT_NEAR(b.images.data<float>()[i * 25 + p], normalised(eval.images.data<uint8_t>()[next * 25 + p], aug), 1e-5);
    }
  });
  EXPECT_EQ(sizes, (std::vector<int64_t>{3, 3, 1}));
}

// A data-parallel rank's shard: samples [begin, end) exactly as the whole pass has them.
TEST(InMemoryImageSource, EvalRangeIsThatSliceOfTheWholePass) {
  InMemoryAugment aug;
  InMemoryImageSource src(pattern_dataset(20, 5), pattern_dataset(11, 5), aug, 1);
  std::vector<Tensor> whole;
  src.for_each_eval_batch(0, 11, 11, [&](const ImageBatch& b) { whole = {b.images, b.labels}; });
  std::vector<int64_t> sizes;
  int64_t next = 4;
  src.for_each_eval_batch(4, 9, 2, [&](const ImageBatch& b) {
    const int64_t n = b.labels.shape()[0];
    sizes.push_back(n);
    EXPECT_EQ(b.labels.to_vector<int64_t>(), whole[1].narrow(0, next, n).to_vector<int64_t>());
    EXPECT_EQ(b.images.to_vector<float>(), whole[0].narrow(0, next, n).contiguous().to_vector<float>());
    next += n;
  });
  EXPECT_EQ(sizes, (std::vector<int64_t>{2, 2, 1}));
  int calls = 0;
  src.for_each_eval_batch(11, 11, 4, [&](const ImageBatch&) { ++calls; });
  EXPECT_EQ(calls, 0);
  EXPECT_THROW(src.for_each_eval_batch(3, 12, 4, [](const ImageBatch&) {}), Error);
  EXPECT_THROW(src.for_each_eval_batch(5, 4, 4, [](const ImageBatch&) {}), Error);
}

TEST(InMemoryImageSource, TrainingSamplesAreShiftedOrFlippedCopiesWithZeroFill) {
  InMemoryAugment aug;
  aug.pad = 2;
  aug.hflip = 0.5;
  const int64_t h = 6, n = 16;
  ImageDataset train = pattern_dataset(n, h);
  InMemoryImageSource src(train, pattern_dataset(4, h), aug, 9);
  EpochSampler order(n, 9, "reference");
  const std::vector<int64_t> ids = order.next(n);
  ImageBatch b = src.next_train(n);
  int flipped = 0, shifted = 0;
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* img = train.images.data<uint8_t>() + ids[size_t(i)] * h * h;
    EXPECT_EQ(b.labels.data<int64_t>()[i], ids[size_t(i)] % 10);
    // Find the (dy, dx, flip) that reproduces the sample: exactly one must match.
    int matches = 0;
    for (int flip = 0; flip < 2; ++flip)
      for (int64_t dy = -2; dy <= 2; ++dy)
        for (int64_t dx = -2; dx <= 2; ++dx) {
          bool same = true;
          for (int64_t y = 0; y < h && same; ++y)
            for (int64_t x = 0; x < h && same; ++x) {
              const int64_t sy = y + dy, sx = (flip ? h - 1 - x : x) + dx;
              const uint8_t v = sy >= 0 && sy < h && sx >= 0 && sx < h ? img[sy * h + sx] : 0;
              same = std::fabs(b.images.data<float>()[(i * h + y) * h + x] - normalised(v, aug)) < 1e-5;
            }
          if (same) {
            ++matches;
            flipped += flip;
            shifted += dy != 0 || dx != 0;
          }
        }
    EXPECT_EQ(matches, 1) << "sample " << i;
  }
  EXPECT_GT(flipped, 0);
  EXPECT_LT(flipped, n);
  EXPECT_GT(shifted, 0);
}

TEST(InMemoryImageSource, ResumingFromAPositionGivesTheSameBatches) {
  InMemoryAugment aug;
  InMemoryImageSource a(pattern_dataset(30, 4), pattern_dataset(3, 4), aug, 5);
  a.next_train(8);
  a.next_train(8);
  const auto state = a.state();
  const ImageBatch expected1 = a.next_train(8), expected2 = a.next_train(12);  // crosses into epoch 1
  EXPECT_EQ(a.state().at("epoch"), 1);

  InMemoryImageSource b(pattern_dataset(30, 4), pattern_dataset(3, 4), aug, 5);
  b.load_state(state);
  const ImageBatch got1 = b.next_train(8), got2 = b.next_train(12);
  test::expect_same_bytes(got1.images, expected1.images, "batch 1 images");
  test::expect_same_bytes(got2.images, expected2.images, "batch 2 images");
  test::expect_same_bytes(got2.labels, expected2.labels, "batch 2 labels");

  InMemoryImageSource other_seed(pattern_dataset(30, 4), pattern_dataset(3, 4), aug, 6);
  test::expect_error([&] { other_seed.load_state(state); }, {"seed"});
}

TEST(InMemoryImageSource, LimitsKeepTheFirstSamples) {
  InMemoryImageSource src(pattern_dataset(50, 4), pattern_dataset(20, 4), InMemoryAugment{}, 2, 12, 5);
  EXPECT_EQ(src.train_size(), 12);
  EXPECT_EQ(src.eval_size(), 5);
  const ImageBatch b = src.next_train(24);  // two whole epochs of the 12 kept samples
  std::vector<int64_t> count(10, 0);
  for (int64_t i = 0; i < 24; ++i) ++count[size_t(b.labels.data<int64_t>()[i])];
  for (int64_t c = 0; c < 10; ++c) EXPECT_EQ(count[size_t(c)], c < 2 ? 4 : 2) << "label " << c;
}

TEST(InMemoryImageSource, RejectsMalformedData) {
  ImageDataset bad = pattern_dataset(4, 4);
  bad.images = zeros({4, 4, 4});  // float, not uint8
  test::expect_error([&] { InMemoryImageSource(bad, pattern_dataset(2, 4), InMemoryAugment{}, 0); }, {"uint8"});
  ImageDataset short_labels = pattern_dataset(4, 4);
  short_labels.labels = zeros({3}, DType::Int64);
  test::expect_error([&] { InMemoryImageSource(short_labels, pattern_dataset(2, 4), InMemoryAugment{}, 0); },
                     {"labels"});
  test::expect_error([&] { InMemoryImageSource(pattern_dataset(4, 4), pattern_dataset(2, 5), InMemoryAugment{}, 0); },
                     {"pixels wide"});
}

}  // namespace
}  // namespace moh
