// Batches of in-memory grey images with crop/flip augmentation (see memory_image_source.h).
#include "data/memory_image_source.h"

#include <algorithm>

#include "core/factory.h"
#include "core/random.h"

namespace moh {
namespace {

int64_t limited(int64_t size, int64_t limit) { return limit > 0 ? std::min(size, limit) : size; }

void check_split(const ImageDataset& d, const char* what) {
  MOH_CHECK(d.images.defined() && d.images.dtype() == DType::UInt8 && d.images.dim() == 3 &&
                d.images.shape()[1] == d.images.shape()[2],
            "in-memory images (", what, "): expected uint8 [N, H, H] images, got ", describe(d.images));
  MOH_CHECK(d.labels.defined() && d.labels.dtype() == DType::Int64 && d.labels.dim() == 1 &&
                d.labels.shape()[0] == d.images.shape()[0],
            "in-memory images (", what, "): expected int64 labels [", d.images.shape()[0], "], got ",
            describe(d.labels));
}

// Writes sample `src` (uint8 [H, H]) shifted by (dy, dx), optionally mirrored, normalised into `dst`.
void write_sample(const uint8_t* src, int64_t h, int64_t dy, int64_t dx, bool flip, const InMemoryAugment& a,
                  float* dst) {
  const float scale = float(1.0 / (255.0 * a.std)), shift = float(-a.mean / a.std);
  for (int64_t y = 0; y < h; ++y) {
    const int64_t sy = y + dy;
    for (int64_t x = 0; x < h; ++x) {
      const int64_t sx = (flip ? h - 1 - x : x) + dx;
      const bool inside = sy >= 0 && sy < h && sx >= 0 && sx < h;
      dst[y * h + x] = (inside ? float(src[sy * h + sx]) : 0.0f) * scale + shift;
    }
  }
}

}  // namespace

InMemoryImageSource::InMemoryImageSource(ImageDataset train, ImageDataset eval, const InMemoryAugment& augment,
                                         uint64_t seed, int64_t train_limit, int64_t eval_limit)
    : train_((check_split(train, "train"), std::move(train))),
      eval_((check_split(eval, "eval"), std::move(eval))),
      augment_(augment),
      seed_(seed),
      train_size_(limited(train_.images.shape()[0], train_limit)),
      eval_size_(limited(eval_.images.shape()[0], eval_limit)),
      sampler_(train_size_, seed, "in-memory images (train)") {
  MOH_CHECK(eval_.images.shape()[1] == train_.images.shape()[1], "in-memory images: eval images are ",
            eval_.images.shape()[1], " pixels wide but training images ", train_.images.shape()[1]);
  MOH_CHECK(augment_.pad >= 0 && augment_.hflip >= 0 && augment_.hflip <= 1 && augment_.std > 0,
            "in-memory images: bad augmentation (pad ", augment_.pad, ", hflip ", augment_.hflip, ", std ",
            augment_.std, ")");
  train_.images = train_.images.contiguous();
  train_.labels = train_.labels.contiguous();
  eval_.images = eval_.images.contiguous();
  eval_.labels = eval_.labels.contiguous();
}

ImageBatch InMemoryImageSource::next_train(int64_t batch_size) {
  std::vector<int64_t> epochs;
  const std::vector<int64_t> ids = sampler_.next(batch_size, &epochs);
  const int64_t h = image_size();
  Tensor images = Tensor::empty({batch_size, 1, h, h});
  Tensor labels = Tensor::empty({batch_size}, DType::Int64);
  const uint8_t* src = train_.images.data<uint8_t>();
  const int64_t* truth = train_.labels.data<int64_t>();
  float* dst = images.data<float>();
  int64_t* out_labels = labels.data<int64_t>();
#pragma omp parallel for schedule(static) if (batch_size >= 16)
  for (int64_t b = 0; b < batch_size; ++b) {
    const int64_t id = ids[size_t(b)];
    Generator g = sample_generator(seed_, epochs[size_t(b)], id);
    const auto u = uniform({3}, 0, 1, g, DType::Float64).to_vector<double>();
    const int64_t span = 2 * augment_.pad + 1;
    const int64_t dy = std::min<int64_t>(int64_t(u[0] * double(span)), span - 1) - augment_.pad;
    const int64_t dx = std::min<int64_t>(int64_t(u[1] * double(span)), span - 1) - augment_.pad;
    write_sample(src + id * h * h, h, dy, dx, u[2] < augment_.hflip, augment_, dst + b * h * h);
    out_labels[b] = truth[id];
  }
  return {images, labels};
}

void InMemoryImageSource::for_each_eval_batch(int64_t begin, int64_t end, int64_t batch_size,
                                              const std::function<void(const ImageBatch&)>& fn) {
  MOH_CHECK(batch_size > 0, "in-memory images: eval batch size must be positive, got ", batch_size);
  MOH_CHECK(0 <= begin && begin <= end && end <= eval_size_, "in-memory images: eval samples [", begin, ", ", end,
            ") are not within the ", eval_size_, " of the evaluation split");
  const int64_t h = image_size();
  const uint8_t* src = eval_.images.data<uint8_t>();
  const int64_t* truth = eval_.labels.data<int64_t>();
  for (int64_t start = begin; start < end; start += batch_size) {
    const int64_t n = std::min(batch_size, end - start);
    Tensor images = Tensor::empty({n, 1, h, h});
    Tensor labels = Tensor::empty({n}, DType::Int64);
    float* dst = images.data<float>();
    for (int64_t b = 0; b < n; ++b) {
      write_sample(src + (start + b) * h * h, h, 0, 0, false, augment_, dst + b * h * h);
      labels.data<int64_t>()[b] = truth[start + b];
    }
    fn({images, labels});
  }
}

}  // namespace moh
