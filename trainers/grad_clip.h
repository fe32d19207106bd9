// The global L2 norm of all gradients and clipping to a maximum norm (torch.nn.utils.
// clip_grad_norm_). CPU gradients: the norm is accumulated in double over fixed chunks combined in a
// fixed order, so it is bit-identical for any thread count. Other devices (UpdatePath, optimizer.h):
// each gradient's sum of squares is an op-built float64 reduction, and all of them (with the
// non-finite flags) come back to the host in one read, where they are added in parameter order.
// A tied weight listed under two names counts once;
// parameters without a gradient are skipped. Non-finite gradients are reported by parameter name
// (the trainer's skip/abort policy uses it) and never clipped.
#pragma once

#include <string>

#include "trainers/optimizer.h"

namespace moh {

struct GradNorm {
  double norm = 0;        // global L2 norm before clipping (inf or nan when a gradient is not finite)
  double scale = 1;       // factor applied to every gradient (1: untouched)
  std::string nonfinite;  // first parameter, in order, whose gradient holds inf or nan; empty if none
  bool finite() const { return nonfinite.empty(); }
  bool clipped() const { return scale != 1; }
};

// The norm only (for logging); gradients are untouched.
GradNorm grad_norm(const NamedParameters& params, UpdatePath path = UpdatePath::Auto);

// When every gradient is finite and c = max_norm / (norm + 1e-6) < 1, multiplies each gradient in
// place by c (PyTorch's rule). Throws unless max_norm > 0 and finite.
GradNorm clip_grad_norm(const NamedParameters& params, double max_norm, UpdatePath path = UpdatePath::Auto);

// The clipping step alone, for a norm computed elsewhere (a norm reduced over ranks): applies
// PyTorch's rule above to `norm` and returns it with the scale it used.
GradNorm clip_to_norm(const NamedParameters& params, GradNorm norm, double max_norm);

}  // namespace moh
