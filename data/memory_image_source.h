// InMemoryImageSource: an ImageSource over two uint8 [N, H, H] grey image sets held in memory
// (Fashion-MNIST). Training augmentation is torchvision's RandomCrop(size, padding=pad) with zero fill
// plus a horizontal flip; both draw from sample_generator(seed, epoch, id), so a batch depends only on
// the loader position, never on threads. Pixels map to (x / 255 - mean) / std.
#pragma once

#include <cstdint>
#include <string>

#include "data/epoch_sampler.h"
#include "data/fashion_mnist.h"
#include "data/image_source.h"

namespace moh {

struct InMemoryAugment {
  int64_t pad = 2;       // random translation of up to `pad` pixels each way (0 = no crop)
  double hflip = 0.5;    // probability of a horizontal flip
  double mean = 0.2860;  // Fashion-MNIST training-set pixel mean and std (after / 255)
  double std = 0.3530;
};

class InMemoryImageSource final : public ImageSource {
 public:
  // `train_limit`/`eval_limit` > 0 keep only the first N samples of a split (quick runs and tests).
  InMemoryImageSource(ImageDataset train, ImageDataset eval, const InMemoryAugment& augment, uint64_t seed,
                      int64_t train_limit = 0, int64_t eval_limit = 0);

  ImageBatch next_train(int64_t batch_size) override;
  void for_each_eval_batch(int64_t begin, int64_t end, int64_t batch_size,
                           const std::function<void(const ImageBatch&)>& fn) override;
  int64_t train_size() const override { return train_size_; }
  int64_t eval_size() const override { return eval_size_; }
  const std::vector<std::string>& class_names() const override { return train_.class_names; }
  int64_t channels() const override { return 1; }
  int64_t image_size() const override { return train_.images.shape()[1]; }
  std::map<std::string, int64_t> state() const override { return sampler_.state(); }
  void load_state(const std::map<std::string, int64_t>& state) override { sampler_.load_state(state); }

 private:
  ImageDataset train_, eval_;
  InMemoryAugment augment_;
  uint64_t seed_;
  int64_t train_size_, eval_size_;
  EpochSampler sampler_;
};

}  // namespace moh
