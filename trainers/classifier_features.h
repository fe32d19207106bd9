// What a trained image classifier sees in a set of images, for the Fréchet distance of generated images
// (moh fid, the DiT task's sample evaluation): the Gaussian statistics of its pooled features (the
// representation its head reads) and its top-1 accuracy against the images' labels (for class-conditional
// samples: how often the classifier recognises the class that was asked for). In eval mode, without a tape.
// FeatureClassifier is a stored vit run used that way: its evaluation weights (eval.use_ema), and images read
// through its own data config (a split of its dataset, or generated uint8 images normalised exactly as that
// data), so real and generated images meet the network the same way.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/image_source.h"
#include "models/vit/vit.h"
#include "trainers/feature_statistics.h"
#include "trainers/stored_run.h"

namespace moh {

struct ClassifierFeatures {
  FeatureStats stats;
  double top1 = 0;
  int64_t images = 0;
};

// The first `count` images of data's evaluation split (0: all of it), `batch` at a time; the model
// lives on the CPU.
ClassifierFeatures classifier_features(VisionTransformer& model, ImageSource& data, int64_t count, int64_t batch);

class FeatureClassifier {
 public:
  // target: a vit RUN_DIR or checkpoint; overrides apply to its config (data.root=...). A run of another
  // task is a ConfigError naming `command`.
  FeatureClassifier(const std::string& target, std::vector<std::string> overrides, int64_t batch,
                    const std::string& command);

  // The first `limit` images of a split of the run's dataset ("train", "test"; 0: as many as the run's
  // data.eval_limit keeps).
  ClassifierFeatures of_split(const std::string& split, int64_t limit) const;
  // uint8 [N, S, S, 1] grey images (S = image_size()) with int64 [N] labels; `what` names them in errors.
  ClassifierFeatures of_images(const Tensor& nhwc, const Tensor& labels, const std::string& what) const;
  // n images of uniform noise (every byte uniform in 0..255, a fixed seed): the ceiling a generator should
  // stay far below.
  ClassifierFeatures of_noise(int64_t n) const;

  int64_t image_size() const { return model_->options().img_size; }
  const std::string& checkpoint() const { return run_.checkpoint; }

 private:
  std::unique_ptr<ImageSource> dataset(const std::vector<std::string>& extra) const;

  StoredRun run_;
  std::vector<std::string> overrides_;
  int64_t batch_;
  std::unique_ptr<VisionTransformer> model_;
};

}  // namespace moh
