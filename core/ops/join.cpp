// Joining and splitting: cat and stack (copies), split and chunk (views that share x's storage).
// cat skips 1-D empty tensors of shape [0] (like PyTorch), so they can seed an accumulation.
#include "core/kernels/join.h"

#include "core/dispatch.h"
#include "core/ops.h"

namespace moh {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  MOH_CHECK(!tensors.empty(), "cat: expected at least one tensor");
  for (size_t i = 0; i < tensors.size(); ++i)
    MOH_CHECK(tensors[i].defined(), "cat: tensor ", i, " is undefined");
  auto legacy_empty = [](const Tensor& t) { return t.shape() == Shape{0}; };
  const Tensor* ref = &tensors[0];
  for (const Tensor& t : tensors)
    if (!legacy_empty(t)) {
      ref = &t;
      break;
    }
  MOH_CHECK(ref->dim() >= 1, "cat: cannot concatenate 0-d tensors (", describe(*ref),
            "); unsqueeze or use stack");
  const int64_t d = wrap_dim(dim, ref->dim(), "cat");
  Shape shape = ref->shape();
  shape[size_t(d)] = 0;
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    MOH_CHECK(t.dtype() == ref->dtype() && t.device() == ref->device(), "cat: tensor ", i, " is ",
              describe(t), " but tensor 0 is ", describe(tensors[0]), " (dtype and device must match)");
    if (legacy_empty(t) && ref->shape() != Shape{0}) continue;
    bool same = t.dim() == ref->dim();
    for (int64_t e = 0; same && e < t.dim(); ++e) same = e == d || t.size(e) == ref->size(e);
    MOH_CHECK(same, "cat: tensor ", i, " ", describe(t), " does not match ", describe(*ref),
              " in every dim except dim ", d);
    shape[size_t(d)] += t.size(d);
    inputs.push_back(t);
  }
  Tensor out = Tensor::empty(shape, ref->dtype(), ref->device());
  MOH_BACKEND(out.device(), cat, out, inputs, d);
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  MOH_CHECK(!tensors.empty(), "stack: expected at least one tensor");
  MOH_CHECK(tensors[0].defined(), "stack: tensor 0 is undefined");
  const int64_t d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> expanded;
  for (size_t i = 0; i < tensors.size(); ++i) {
    MOH_CHECK(tensors[i].defined() && tensors[i].shape() == tensors[0].shape(), "stack: tensor ", i, " ",
              describe(tensors[i]), " differs in shape from tensor 0 ", describe(tensors[0]));
    expanded.push_back(tensors[i].unsqueeze(d));
  }
  return cat(expanded, d);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t dim) {
  MOH_CHECK(x.defined() && x.dim() >= 1, "split: expected a tensor with at least 1 dim, got ", describe(x));
  const int64_t d = wrap_dim(dim, x.dim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    MOH_CHECK(s >= 0, "split: negative size ", s, " in sizes ", shape_str(sizes));
    total += s;
  }
  MOH_CHECK(total == x.size(d), "split: sizes ", shape_str(sizes), " add up to ", total, " but dim ", d,
            " of ", describe(x), " has size ", x.size(d));
  std::vector<Tensor> parts;
  int64_t offset = 0;
  for (int64_t s : sizes) {
    parts.push_back(x.narrow(d, offset, s));
    offset += s;
  }
  return parts;
}

std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim) {
  MOH_CHECK(x.defined() && x.dim() >= 1, "split: expected a tensor with at least 1 dim, got ", describe(x));
  const int64_t n = x.size(wrap_dim(dim, x.dim(), "split"));
  MOH_CHECK(split_size > 0 || (split_size == 0 && n == 0), "split: split_size must be positive, got ",
            split_size, " for ", describe(x));
  std::vector<int64_t> sizes;
  for (int64_t at = 0; at < n; at += split_size) sizes.push_back(std::min(split_size, n - at));
  if (n == 0) sizes.push_back(0);
  return split(x, sizes, dim);
}

std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim) {
  MOH_CHECK(chunks > 0, "chunk: chunks must be positive, got ", chunks);
  MOH_CHECK(x.defined() && x.dim() >= 1, "chunk: expected a tensor with at least 1 dim, got ", describe(x));
  const int64_t n = x.size(wrap_dim(dim, x.dim(), "chunk"));
  if (n == 0)
    return split(x, std::vector<int64_t>(static_cast<size_t>(chunks), 0), dim);  // `chunks` empty views
  return split(x, (n + chunks - 1) / chunks, dim);
}

}  // namespace moh
