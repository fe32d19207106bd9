// What a trained image classifier sees in a set of images, for the Fréchet distance of generated images
// (moh fid): the Gaussian statistics of its pooled features (the representation its head reads) and its
// top-1 accuracy against the images' labels (for class-conditional samples: how often the classifier
// recognises the class that was asked for). In eval mode, without a tape.
#pragma once

#include <cstdint>

#include "data/image_source.h"
#include "models/vit/vit.h"
#include "trainers/feature_statistics.h"

namespace moh {

struct ClassifierFeatures {
  FeatureStats stats;
  double top1 = 0;
  int64_t images = 0;
};

// The first `count` images of data's evaluation split (0: all of it), `batch` at a time; the model
// lives on the CPU.
ClassifierFeatures classifier_features(VisionTransformer& model, ImageSource& data, int64_t count, int64_t batch);

}  // namespace moh
