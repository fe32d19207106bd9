// The image-dataset config keys (data.*) and the ImageSource they describe, shared by the task
// families that read labelled images (vit, autoencoder): Fashion-MNIST in memory or an ImageNet-style
// folder, with the training augmentation and the held-out split. Each family chooses the pixel range
// its model expects and the augmentation defaults.
#pragma once

#include <memory>

#include "data/fashion_mnist.h"
#include "data/image_source.h"
#include "trainers/config.h"
#include "trainers/config_schema.h"
#include "trainers/warning_channel.h"

namespace moh {

enum class PixelRange {
  Standardized,  // (x - mean) / std with the dataset's channel statistics (classifiers)
  SignedUnit,    // [-1, 1]: 2 x - 1 (generative models)
};

struct ImageDataDefaults {
  int64_t crop_padding = 2;  // fashion_mnist random translation
  double hflip = 0.5;
};

// data.name, data.root, data.eval_split, the image_folder and fashion_mnist options, data.hflip,
// data.train_limit and data.eval_limit.
void add_image_data_keys(config::Schema& s, const ImageDataDefaults& defaults);

// The source a validated config describes; training draws use `seed`. data.eval_split picks the
// held-out split: an image_folder sub-folder, or for fashion_mnist "val"/"test" (the 10,000 test images)
// or "train" (the training images in order, as `moh encode` reads them). Recoverable loader problems go
// to `warnings`. ConfigErrors name the key.
std::unique_ptr<ImageSource> make_image_source(const Config& cfg, PixelRange range, uint64_t seed,
                                               const WarningChannel& warnings);

// A source whose evaluation split is `images` (uint8 grey images [N, H, W] with labels: generated
// samples), normalised as make_image_source normalises cfg's data for `range`, without augmentation.
// Only in-memory (fashion_mnist) configs have such a form; another data.name is a ConfigError.
std::unique_ptr<ImageSource> make_image_source_over(const Config& cfg, PixelRange range, ImageDataset images);

}  // namespace moh
