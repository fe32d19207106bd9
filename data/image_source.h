// ImageSource: what an image-classification task trains and evaluates on. A source owns both splits
// and hands out ready batches: float32 [B, C, S, S] images, normalised, augmented for training, and
// int64 [B] labels. Training batches follow a resumable order (state()/load_state(), the EpochSampler
// position), so a resumed run sees exactly the batches the interrupted one would have seen.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace moh {

struct ImageBatch {
  Tensor images;  // float32 [B, C, S, S]
  Tensor labels;  // int64 [B]
};

class ImageSource {
 public:
  virtual ~ImageSource() = default;
  // The next `batch_size` augmented training samples (crossing epochs as needed).
  virtual ImageBatch next_train(int64_t batch_size) = 0;
  // Samples [begin, end) of the evaluation split in order, `batch_size` at a time (the last batch may
  // be smaller); 0 <= begin <= end <= eval_size(). A data-parallel evaluation passes each rank's shard.
  virtual void for_each_eval_batch(int64_t begin, int64_t end, int64_t batch_size,
                                   const std::function<void(const ImageBatch&)>& fn) = 0;
  virtual int64_t train_size() const = 0;
  virtual int64_t eval_size() const = 0;
  virtual const std::vector<std::string>& class_names() const = 0;
  virtual int64_t channels() const = 0;
  virtual int64_t image_size() const = 0;  // S: images are square
  // Loader position of the training split ({"epoch", "index", ...}) and its restore.
  virtual std::map<std::string, int64_t> state() const = 0;
  virtual void load_state(const std::map<std::string, int64_t>& state) = 0;
};

}  // namespace moh
