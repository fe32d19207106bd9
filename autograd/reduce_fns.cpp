// Reductions: each backward reshapes grad_out to the keepdim shape (reduced dims of size 1) and
// broadcasts it back over the input (a stride-0 view, no copy, for sum and mean).
#include "autograd/reduce_fns.h"

#include "autograd/tape.h"
#include "core/ops.h"

namespace moh::ag {
namespace {

using Grads = std::vector<Tensor>;

struct Reduced {
  Shape keep;     // the input shape with reduced dims set to 1
  int64_t count;  // elements reduced into each output
};

Reduced reduced_shape(const Shape& shape, const std::vector<int64_t>& dims, const char* op) {
  Reduced r{shape, 1};
  const int64_t ndim = int64_t(shape.size());
  if (dims.empty()) {
    for (auto& s : r.keep) s = 1;
    r.count = shape_numel(shape);
    return r;
  }
  for (int64_t d : dims) {
    const size_t w = size_t(wrap_dim(d, ndim, op));
    r.count *= r.keep[w];  // a repeated dim is already 1
    r.keep[w] = 1;
  }
  return r;
}

}  // namespace

Variable sum(const Variable& x, const std::vector<int64_t>& dims, bool keepdim) {
  Tensor out = moh::sum(x.data(), dims, keepdim);
  Reduced r = reduced_shape(x.shape(), dims, "sum");
  return record("sum", out, {x}, [keep = r.keep, shape = x.shape()](const Tensor& g, const Needs&) {
    return Grads{g.reshape(keep).expand(shape)};
  });
}

Variable mean(const Variable& x, const std::vector<int64_t>& dims, bool keepdim) {
  Tensor out = moh::mean(x.data(), dims, keepdim);
  Reduced r = reduced_shape(x.shape(), dims, "mean");
  return record("mean", out, {x}, [r, shape = x.shape()](const Tensor& g, const Needs&) {
    return Grads{moh::div(g, double(r.count)).reshape(r.keep).expand(shape)};
  });
}

Variable amax(const Variable& x, const std::vector<int64_t>& dims, bool keepdim) {
  Tensor out = moh::amax(x.data(), dims, keepdim);
  Reduced r = reduced_shape(x.shape(), dims, "amax");
  return record("amax", out, {x},
                [x = x.data(), out_keep = out.reshape(r.keep), dims](const Tensor& g, const Needs&) {
                  Tensor ties = moh::eq(x, out_keep).to(x.dtype());
                  Tensor share = moh::div(g.reshape(out_keep.shape()), moh::sum(ties, dims, true));
                  return Grads{moh::mul(ties, share)};
                });
}

// d var / dx = 2 (x - mean) / (count - correction).
Variable variance(const Variable& x, const std::vector<int64_t>& dims, int64_t correction, bool keepdim) {
  Tensor out = moh::variance(x.data(), dims, correction, keepdim);
  Reduced r = reduced_shape(x.shape(), dims, "variance");
  return record("variance", out, {x}, [x = x.data(), r, dims, correction](const Tensor& g, const Needs&) {
    Tensor centered = moh::sub(x, moh::mean(x, dims, true));
    const double scale = 2.0 / double(r.count - correction);
    return Grads{moh::mul(centered, moh::mul(g.reshape(r.keep), scale))};
  });
}

}  // namespace moh::ag
