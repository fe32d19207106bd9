// Mixup / CutMix (see mixup.h).
#include "data/mixup.h"

#include <algorithm>
#include <cmath>

#include "core/factory.h"

namespace moh {
namespace {

double uniform01(Generator& gen) { return uniform({1}, 0, 1, gen, DType::Float64).item<double>(); }
double standard_normal(Generator& gen) { return normal({1}, 0, 1, gen, DType::Float64).item<double>(); }

// Gamma(shape, 1) by Marsaglia and Tsang (2000); shape < 1 boosted with U^(1/shape).
double sample_gamma(double shape, Generator& gen) {
  if (shape < 1) return sample_gamma(shape + 1, gen) * std::pow(std::max(uniform01(gen), 1e-300), 1 / shape);
  const double d = shape - 1.0 / 3.0, c = 1 / std::sqrt(9 * d);
  for (;;) {
    const double z = standard_normal(gen), v = std::pow(1 + c * z, 3);
    if (v <= 0) continue;
    const double u = uniform01(gen);
    if (std::log(std::max(u, 1e-300)) < 0.5 * z * z + d - d * v + d * std::log(v)) return d * v;
  }
}

}  // namespace

double sample_beta(double alpha, Generator& gen) {
  MOH_CHECK(alpha > 0, "sample_beta: alpha must be positive, got ", alpha);
  const double x = sample_gamma(alpha, gen), y = sample_gamma(alpha, gen);
  return x + y > 0 ? x / (x + y) : 0.5;
}

MixedBatch mix_batch(const Tensor& images, const Tensor& labels, const MixOptions& options, Generator& gen) {
  MOH_CHECK(images.defined() && images.dtype() == DType::Float32 && images.dim() == 4,
            "mix_batch: expected float32 images [B, C, H, W], got ", describe(images));
  MOH_CHECK(labels.defined() && labels.dtype() == DType::Int64 && labels.dim() == 1 &&
                labels.shape()[0] == images.shape()[0],
            "mix_batch: expected int64 labels [", images.shape()[0], "], got ", describe(labels));
  const int64_t B = images.shape()[0], C = images.shape()[1], H = images.shape()[2], W = images.shape()[3];
  Tensor src = images.contiguous();
  const Tensor truth = labels.contiguous();
  Tensor partner = Tensor::empty({B}, DType::Int64);
  for (int64_t b = 0; b < B; ++b) partner.data<int64_t>()[b] = truth.data<int64_t>()[B - 1 - b];
  // Draw everything up front, in a fixed order, so the stream does not depend on which branch runs.
  const double apply = uniform01(gen), which = uniform01(gen);
  if (!options.enabled() || apply >= options.prob) return {images, partner, 1.0};
  const bool cutmix = options.cutmix_alpha > 0 && (options.mixup_alpha <= 0 || which < options.switch_prob);
  double lam = sample_beta(cutmix ? options.cutmix_alpha : options.mixup_alpha, gen);
  Tensor out = Tensor::empty(images.shape());
  const float* in = src.data<float>();
  float* o = out.data<float>();
  const int64_t per_sample = C * H * W;
  if (!cutmix) {
    const float a = float(lam), b = float(1 - lam);
    for (int64_t s = 0; s < B; ++s)
      for (int64_t i = 0; i < per_sample; ++i)
        o[s * per_sample + i] = a * in[s * per_sample + i] + b * in[(B - 1 - s) * per_sample + i];
    return {out, partner, lam};
  }
  // CutMix box: side ratio sqrt(1 - lam), centre uniform, clipped to the image (timm's rand_bbox).
  const double cut = std::sqrt(1 - lam), cy = uniform01(gen) * double(H), cx = uniform01(gen) * double(W);
  const int64_t half_h = int64_t(double(H) * cut / 2), half_w = int64_t(double(W) * cut / 2);
  const int64_t y0 = std::clamp<int64_t>(int64_t(cy) - half_h, 0, H), y1 = std::clamp<int64_t>(int64_t(cy) + half_h, 0, H);
  const int64_t x0 = std::clamp<int64_t>(int64_t(cx) - half_w, 0, W), x1 = std::clamp<int64_t>(int64_t(cx) + half_w, 0, W);
  std::copy(in, in + B * per_sample, o);
  for (int64_t s = 0; s < B; ++s)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = y0; y < y1; ++y)
        for (int64_t x = x0; x < x1; ++x) {
          const int64_t at = ((c * H) + y) * W + x;
          o[s * per_sample + at] = in[(B - 1 - s) * per_sample + at];
        }
  lam = 1 - double((y1 - y0) * (x1 - x0)) / double(H * W);
  return {out, partner, lam};
}

}  // namespace moh
