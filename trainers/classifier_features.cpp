// Classifier features and accuracy over an image source (see classifier_features.h).
#include "trainers/classifier_features.h"

#include <algorithm>

#include "autograd/tape.h"
#include "core/ops.h"

namespace moh {

ClassifierFeatures classifier_features(VisionTransformer& model, ImageSource& data, int64_t count, int64_t batch) {
  const int64_t n = count > 0 ? std::min(count, data.eval_size()) : data.eval_size();
  MOH_CHECK(n >= 2, "classifier_features: need at least 2 images for a covariance, the split holds ", n);
  ag::NoGradGuard no_grad;
  EvalModeGuard eval_mode(model);
  FeatureAccumulator features(model.options().dim);
  int64_t correct = 0;
  data.for_each_eval_batch(0, n, batch, [&](const ImageBatch& b) {
    const VitOutput out = model.forward(ag::Variable(b.images));
    features.add(out.features.data());
    const std::vector<int64_t> predicted = argmax(out.logits.data(), 1).to_vector<int64_t>();
    const std::vector<int64_t> truth = b.labels.to_vector<int64_t>();
    for (size_t i = 0; i < truth.size(); ++i) correct += predicted[i] == truth[i];
  });
  return {features.finish(), double(correct) / double(n), n};
}

}  // namespace moh
