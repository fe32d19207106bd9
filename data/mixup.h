// Mixup and CutMix for image batches (timm's batch mode): with probability `prob` a batch is mixed with
// its own reverse (sample i with sample B-1-i), by Mixup (pixel blend with weight lam) or CutMix (a box
// of area ~(1 - lam) pasted from the partner, lam corrected to the exact box area); lam ~ Beta(a, a).
// The loss is then lam * CE(logits, labels) + (1 - lam) * CE(logits, partner labels), which with label
// smoothing equals the soft-target cross entropy of the mixed smoothed targets.
#pragma once

#include <cstdint>

#include "core/random.h"
#include "core/tensor.h"

namespace moh {

struct MixOptions {
  double mixup_alpha = 0;   // > 0 enables Mixup
  double cutmix_alpha = 0;  // > 0 enables CutMix
  double prob = 1.0;        // probability that a batch is mixed at all
  double switch_prob = 0.5; // with both enabled: probability of CutMix instead of Mixup
  bool enabled() const { return mixup_alpha > 0 || cutmix_alpha > 0; }
};

struct MixedBatch {
  Tensor images;          // mixed float32 [B, C, H, W]
  Tensor partner_labels;  // int64 [B]: the labels of the partner samples
  double lam = 1.0;       // weight of the original labels (1 = not mixed)
};

// A Beta(alpha, alpha) draw (alpha > 0) from Gamma variates (Marsaglia-Tsang) on `gen`.
double sample_beta(double alpha, Generator& gen);

// Mixes `images` (float32 [B, C, H, W], not modified) with labels `labels`; all randomness from `gen`.
MixedBatch mix_batch(const Tensor& images, const Tensor& labels, const MixOptions& options, Generator& gen);

}  // namespace moh
