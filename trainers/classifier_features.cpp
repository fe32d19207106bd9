// Classifier features and accuracy over an image source, and a stored vit run as a feature network (see
// classifier_features.h).
#include "trainers/classifier_features.h"

#include <algorithm>

#include "autograd/tape.h"
#include "core/factory.h"
#include "core/ops.h"
#include "core/random.h"
#include "data/fashion_mnist.h"
#include "trainers/image_data_config.h"
#include "trainers/trainer.h"
#include "trainers/vit_task.h"

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

FeatureClassifier::FeatureClassifier(const std::string& target, std::vector<std::string> overrides, int64_t batch,
                                     const std::string& command)
    : run_(open_stored_run(target, overrides, command)), overrides_(std::move(overrides)), batch_(batch) {
  require_task(run_, "vit", command, "an image classifier (a vit run)");
  MOH_CHECK(batch_ >= 1, command, ": the feature batch must be at least 1, got ", batch_);
  const auto data = dataset({"data.eval_limit=2"});
  Generator init(0);  // the weights are the checkpoint's
  model_ = std::make_unique<VisionTransformer>(vit_options_from_config(run_.config, *data), init);
  model_->load_state_dict(weights_to_evaluate(run_));
  model_->eval();
}

std::unique_ptr<ImageSource> FeatureClassifier::dataset(const std::vector<std::string>& extra) const {
  std::vector<std::string> all = overrides_;
  all.insert(all.end(), extra.begin(), extra.end());
  const Config cfg =
      Config::parse(run_.data.config_text, training_schema("vit"), run_.checkpoint + " (stored config)", all);
  WarningChannel warnings;
  return make_image_source(cfg, PixelRange::Standardized, 0, warnings);
}

ClassifierFeatures FeatureClassifier::of_split(const std::string& split, int64_t limit) const {
  std::vector<std::string> extra{"data.eval_split=" + split};
  if (limit > 0) extra.push_back(str_cat("data.eval_limit=", limit));
  const auto data = dataset(extra);
  return classifier_features(*model_, *data, 0, batch_);
}

ClassifierFeatures FeatureClassifier::of_images(const Tensor& nhwc, const Tensor& labels,
                                                const std::string& what) const {
  const int64_t side = image_size();
  MOH_CHECK(nhwc.defined() && nhwc.dtype() == DType::UInt8 && nhwc.dim() == 4 && nhwc.size(3) == 1 &&
                nhwc.size(1) == side && nhwc.size(2) == side,
            what, " must hold uint8 [N, ", side, ", ", side, ", 1] images (the classifier's size), got ",
            nhwc.defined() ? describe(nhwc) : "nothing");
  ImageDataset images{nhwc.reshape({nhwc.size(0), side, side}).contiguous(), labels, fashion_mnist_class_names()};
  const auto data = make_image_source_over(run_.config, PixelRange::Standardized, std::move(images));
  return classifier_features(*model_, *data, 0, batch_);
}

ClassifierFeatures FeatureClassifier::of_noise(int64_t n) const {
  Generator gen(0);
  const int64_t side = image_size();
  const Tensor noise = clamp(mul(uniform({n, side, side, 1}, 0.0, 1.0, gen), 256.0), 0.0, 255.0).to(DType::UInt8);
  return of_images(noise, zeros({n}, DType::Int64), "noise");
}

}  // namespace moh
