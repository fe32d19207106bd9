// Shape functions. Reshape-like views send the gradient back through reshape; narrow/slice/select
// write it into a zero tensor of the input shape; expand returns it as is (the engine sums it
// back to the input shape); split/chunk concatenate their output gradients.
#include "autograd/shape_fns.h"

#include "autograd/tape.h"
#include "core/factory.h"
#include "core/ops.h"

namespace moh::ag {
namespace {

using Grads = std::vector<Tensor>;

Variable reshaped(const char* op, Tensor out, const Variable& x) {
  return record(op, std::move(out), {x},
                [shape = x.shape()](const Tensor& g, const Needs&) { return Grads{g.reshape(shape)}; });
}

// The gradient of a view `part_of(x)`: zeros of x's shape with g written into that part.
template <class F>
Variable part(const char* op, const Variable& x, F part_of) {
  return record(op, part_of(x.data()), {x}, [shape = x.shape(), part_of](const Tensor& g, const Needs&) {
    Tensor grad = zeros(shape, g.dtype(), g.device());
    part_of(grad).copy_(g);
    return Grads{grad};
  });
}

std::vector<Variable> split_outputs(const char* op, const Variable& x, std::vector<Tensor> parts,
                                    int64_t dim) {
  return record_multi(op, std::move(parts), {x}, [dim](const std::vector<Tensor>& grads, const Needs&) {
    return Grads{moh::cat(grads, dim)};
  });
}

}  // namespace

Variable reshape(const Variable& x, const Shape& shape) {
  return reshaped("reshape", x.data().reshape(shape), x);
}
Variable view(const Variable& x, const Shape& shape) { return reshaped("view", x.data().view(shape), x); }
Variable squeeze(const Variable& x, int64_t dim) { return reshaped("squeeze", x.data().squeeze(dim), x); }
Variable unsqueeze(const Variable& x, int64_t dim) {
  return reshaped("unsqueeze", x.data().unsqueeze(dim), x);
}

Variable flatten(const Variable& x, int64_t start_dim, int64_t end_dim) {
  return reshaped("flatten", x.data().flatten(start_dim, end_dim), x);
}

Variable permute(const Variable& x, const std::vector<int64_t>& dims) {
  Tensor out = x.data().permute(dims);  // validates dims
  std::vector<int64_t> inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    inverse[size_t(wrap_dim(dims[i], x.dim(), "permute"))] = int64_t(i);
  return record("permute", out, {x},
                [inverse](const Tensor& g, const Needs&) { return Grads{g.permute(inverse)}; });
}

Variable transpose(const Variable& x, int64_t d0, int64_t d1) {
  return record("transpose", x.data().transpose(d0, d1), {x},
                [d0, d1](const Tensor& g, const Needs&) { return Grads{g.transpose(d0, d1)}; });
}

Variable narrow(const Variable& x, int64_t dim, int64_t start, int64_t length) {
  return part("narrow", x, [=](const Tensor& t) { return t.narrow(dim, start, length); });
}

Variable slice(const Variable& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  return part("slice", x, [=](const Tensor& t) { return t.slice(dim, start, end, step); });
}

Variable select(const Variable& x, int64_t dim, int64_t index) {
  return part("select", x, [=](const Tensor& t) { return t.select(dim, index); });
}

Variable expand(const Variable& x, const Shape& shape) {
  return record("expand", x.data().expand(shape), {x},
                [](const Tensor& g, const Needs&) { return Grads{g}; });
}

Variable contiguous(const Variable& x) {
  if (x.data().is_contiguous()) return x;
  return record("contiguous", x.data().contiguous(), {x},
                [](const Tensor& g, const Needs&) { return Grads{g}; });
}

Variable cat(const std::vector<Variable>& xs, int64_t dim) {
  std::vector<Tensor> data;
  std::vector<int64_t> sizes;
  for (const Variable& x : xs) data.push_back(x.data());
  Tensor out = moh::cat(data, dim);
  const int64_t d = wrap_dim(dim, out.dim(), "cat");
  for (const Tensor& t : data) sizes.push_back(t.size(d));
  return record("cat", out, xs, [d, sizes](const Tensor& g, const Needs& needs) {
    Grads grads(sizes.size());
    int64_t start = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (needs[i]) grads[i] = g.narrow(d, start, sizes[i]);
      start += sizes[i];
    }
    return grads;
  });
}

Variable stack(const std::vector<Variable>& xs, int64_t dim) {
  std::vector<Tensor> data;
  for (const Variable& x : xs) data.push_back(x.data());
  Tensor out = moh::stack(data, dim);
  const int64_t d = wrap_dim(dim, out.dim(), "stack");
  return record("stack", out, xs, [d](const Tensor& g, const Needs& needs) {
    Grads grads(needs.size());
    for (size_t i = 0; i < needs.size(); ++i)
      if (needs[i]) grads[i] = g.select(d, int64_t(i));
    return grads;
  });
}

std::vector<Variable> split(const Variable& x, int64_t split_size, int64_t dim) {
  return split_outputs("split", x, moh::split(x.data(), split_size, dim), dim);
}

std::vector<Variable> split(const Variable& x, const std::vector<int64_t>& sizes, int64_t dim) {
  return split_outputs("split", x, moh::split(x.data(), sizes, dim), dim);
}

std::vector<Variable> chunk(const Variable& x, int64_t chunks, int64_t dim) {
  return split_outputs("chunk", x, moh::chunk(x.data(), chunks, dim), dim);
}

}  // namespace moh::ag
