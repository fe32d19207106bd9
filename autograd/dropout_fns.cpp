// dropout: one tape node saving the bool mask (a quarter of a float32 mask's memory).
#include "autograd/dropout_fns.h"

#include "autograd/tape.h"
#include "core/factory.h"
#include "core/ops.h"

namespace moh::ag {

Variable dropout(const Variable& x, double p, Generator& gen) {
  DropoutForward forward = moh::dropout(x.data(), p, gen);
  const double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;
  return record("dropout", forward.out, {x}, [mask = forward.mask, scale](const Tensor& g, const Needs&) {
    return std::vector<Tensor>{
        moh::where(mask, moh::mul(g, scale), scalar_tensor(0.0, g.dtype(), g.device()))};
  });
}

}  // namespace moh::ag
