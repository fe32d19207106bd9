// upsample_nearest2d / avg_pool2d: one tape node each with input x; both backward maps are linear
// in grad_out, so the closures keep the scale (or kernel, stride and input shape) only.
#include "autograd/resample_fns.h"

#include "autograd/tape.h"
#include "core/ops.h"

namespace moh::ag {

Variable upsample_nearest2d(const Variable& x, int64_t scale) {
  return record("upsample_nearest2d", moh::upsample_nearest2d(x.data(), scale), {x},
                [scale](const Tensor& g, const Needs&) {
                  return std::vector<Tensor>{moh::upsample_nearest2d_backward(g, scale)};
                });
}

Variable avg_pool2d(const Variable& x, int64_t kernel, int64_t stride) {
  return record("avg_pool2d", moh::avg_pool2d(x.data(), kernel, stride), {x},
                [shape = x.data().shape(), kernel, stride](const Tensor& g, const Needs&) {
                  return std::vector<Tensor>{moh::avg_pool2d_backward(g, shape, kernel, stride)};
                });
}

}  // namespace moh::ag
