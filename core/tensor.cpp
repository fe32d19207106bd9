// Tensor: construction, views, copies and host access.
#include "core/tensor.h"

#if defined(MOH_WITH_CUDA)
#include "core/cuda/runtime.h"
#endif

#include <algorithm>
#include <numeric>
#include <optional>
#include <sstream>

#include "core/dispatch.h"
#include "core/kernels/copy.h"

namespace moh {

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t s : shape) MOH_CHECK(s >= 0, "Tensor::empty: negative size in shape ", shape);
  auto storage = std::make_shared<Storage>(size_t(shape_numel(shape)) * dtype_size(dtype), device);
  return Tensor(std::move(storage), shape, contiguous_strides(shape), 0, dtype);
}

Tensor::Tensor(std::shared_ptr<Storage> storage, Shape shape, std::vector<int64_t> strides, int64_t offset,
               DType dtype)
    : storage_(std::move(storage)), shape_(std::move(shape)), strides_(std::move(strides)), offset_(offset),
      dtype_(dtype) {
  MOH_CHECK(storage_, "Tensor: null storage");
  MOH_CHECK(shape_.size() == strides_.size(), "Tensor: shape ", shape_, " and strides ", strides_,
            " differ in rank");
  if (numel() == 0) return;
  int64_t lo = offset_, hi = offset_;
  for (size_t d = 0; d < shape_.size(); ++d) {
    int64_t reach = (shape_[d] - 1) * strides_[d];
    (reach < 0 ? lo : hi) += reach;
  }
  MOH_CHECK(lo >= 0 && size_t(hi + 1) * dtype_size(dtype_) <= storage_->nbytes(), "Tensor: view ", shape_,
            " strides ", strides_, " offset ", offset_, " does not fit a storage of ", storage_->nbytes(), " bytes");
}

int64_t Tensor::size(int64_t d) const { return shape_[size_t(wrap_dim(d, dim(), "Tensor::size"))]; }
int64_t Tensor::stride(int64_t d) const { return strides_[size_t(wrap_dim(d, dim(), "Tensor::stride"))]; }
Device Tensor::device() const { return storage_ ? storage_->device() : Device::cpu(); }

void* Tensor::raw_data() const {
  MOH_CHECK(defined(), "Tensor: access to an undefined tensor");
  return static_cast<char*>(storage_->data()) + offset_ * int64_t(dtype_size(dtype_));
}

bool Tensor::is_contiguous() const {
  if (numel() == 0) return true;
  int64_t expected = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

// ------------------------------------------------------------------------------------- views

namespace {

// Resolves one -1 entry of a requested shape against numel.
Shape infer_shape(Shape shape, int64_t numel, const char* op, const Shape& from) {
  int64_t known = 1, infer_at = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      MOH_CHECK(infer_at < 0, op, ": only one dim may be -1 in ", shape);
      infer_at = int64_t(i);
    } else {
      MOH_CHECK(shape[i] >= 0, op, ": invalid size ", shape[i], " in ", shape);
      known *= shape[i];
    }
  }
  if (infer_at >= 0) {
    MOH_CHECK(known != 0 && numel % known == 0, op, ": cannot infer -1 in ", shape, " for ", numel,
              " elements (from ", from, ")");
    shape[size_t(infer_at)] = numel / known;
  }
  MOH_CHECK(shape_numel(shape) == numel, op, ": shape ", shape, " has ", shape_numel(shape),
            " elements but the tensor ", from, " has ", numel);
  return shape;
}

// Strides for viewing (shape, strides) as `target` without copying, or empty when impossible.
// Walks groups of old dims that multiply to groups of new dims; each old group must be
// contiguous within itself.
std::optional<std::vector<int64_t>> view_strides(const Shape& shape, const std::vector<int64_t>& strides,
                                                 const Shape& target) {
  std::vector<int64_t> out(target.size(), 0);
  if (shape_numel(shape) == 0) return contiguous_strides(target);
  Shape s;
  std::vector<int64_t> st;
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape[i] != 1) { s.push_back(shape[i]); st.push_back(strides[i]); }
  size_t oi = 0, ti = 0;
  while (ti < target.size() || oi < s.size()) {
    if (ti < target.size() && target[ti] == 1) { out[ti] = 1; ++ti; continue; }
    if (oi >= s.size() || ti >= target.size()) return std::nullopt;
    // Gather one old group [oi, oj) and one new group [ti, tj) with equal products.
    size_t oj = oi + 1, tj = ti + 1;
    int64_t po = s[oi], pt = target[ti];
    while (po != pt) {
      if (po < pt) {
        if (oj >= s.size()) return std::nullopt;
        if (st[oj - 1] != st[oj] * s[oj]) return std::nullopt;  // group not contiguous
        po *= s[oj++];
      } else {
        if (tj >= target.size()) return std::nullopt;
        pt *= target[tj++];
      }
    }
    // The group's innermost stride; assign new strides right to left.
    int64_t stride = st[oj - 1];
    for (size_t k = tj; k-- > ti;) {
      out[k] = stride;
      stride *= target[k];
    }
    oi = oj;
    ti = tj;
  }
  return out;
}

}  // namespace

Tensor Tensor::view(const Shape& shape) const {
  Shape target = infer_shape(shape, numel(), "view", shape_);
  auto strides = view_strides(shape_, strides_, target);
  MOH_CHECK(strides.has_value(), "view: cannot view a tensor of shape ", shape_, " with strides ", strides_,
            " as ", target, " without copying (use reshape)");
  return Tensor(storage_, target, *strides, offset_, dtype_);
}

Tensor Tensor::reshape(const Shape& shape) const {
  Shape target = infer_shape(shape, numel(), "reshape", shape_);
  if (auto strides = view_strides(shape_, strides_, target)) return Tensor(storage_, target, *strides, offset_, dtype_);
  return contiguous().view(target);
}

Tensor Tensor::flatten(int64_t start_dim, int64_t end_dim) const {
  if (dim() == 0) return reshape({1});
  int64_t s = wrap_dim(start_dim, dim(), "flatten"), e = wrap_dim(end_dim, dim(), "flatten");
  MOH_CHECK(s <= e, "flatten: start_dim ", start_dim, " comes after end_dim ", end_dim);
  Shape target(shape_.begin(), shape_.begin() + s);
  int64_t merged = 1;
  for (int64_t d = s; d <= e; ++d) merged *= shape_[size_t(d)];
  target.push_back(merged);
  target.insert(target.end(), shape_.begin() + e + 1, shape_.end());
  return reshape(target);
}

Tensor Tensor::permute(const std::vector<int64_t>& dims) const {
  MOH_CHECK(int64_t(dims.size()) == dim(), "permute: got ", dims.size(), " dims for a tensor of shape ", shape_);
  Shape shape(dims.size());
  std::vector<int64_t> strides(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], dim(), "permute");
    MOH_CHECK(!seen[size_t(d)], "permute: dim ", dims[i], " repeated in the permutation");
    seen[size_t(d)] = true;
    shape[i] = shape_[size_t(d)];
    strides[i] = strides_[size_t(d)];
  }
  return Tensor(storage_, shape, strides, offset_, dtype_);
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  int64_t a = wrap_dim(d0, dim(), "transpose"), b = wrap_dim(d1, dim(), "transpose");
  Shape shape = shape_;
  std::vector<int64_t> strides = strides_;
  std::swap(shape[size_t(a)], shape[size_t(b)]);
  std::swap(strides[size_t(a)], strides[size_t(b)]);
  return Tensor(storage_, shape, strides, offset_, dtype_);
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  int64_t w = wrap_dim(d, dim(), "narrow");
  MOH_CHECK(start >= 0 && length >= 0 && start + length <= shape_[size_t(w)], "narrow: range [", start, ", ",
            start + length, ") is outside dim ", d, " of size ", shape_[size_t(w)], " (shape ", shape_, ")");
  Shape shape = shape_;
  shape[size_t(w)] = length;
  return Tensor(storage_, shape, strides_, offset_ + start * strides_[size_t(w)], dtype_);
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  int64_t w = wrap_dim(d, dim(), "slice");
  MOH_CHECK(step > 0, "slice: step must be positive, got ", step);
  int64_t n = shape_[size_t(w)];
  auto clampi = [n](int64_t i) { return std::clamp(i < 0 ? i + n : i, int64_t(0), n); };
  int64_t s = clampi(start), e = std::max(clampi(end), s);
  Shape shape = shape_;
  std::vector<int64_t> strides = strides_;
  shape[size_t(w)] = (e - s + step - 1) / step;
  strides[size_t(w)] *= step;
  return Tensor(storage_, shape, strides, offset_ + s * strides_[size_t(w)], dtype_);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  int64_t w = wrap_dim(d, dim(), "select");
  int64_t n = shape_[size_t(w)];
  int64_t i = index < 0 ? index + n : index;
  MOH_CHECK(i >= 0 && i < n, "select: index ", index, " is out of range for dim ", d, " of size ", n);
  Shape shape = shape_;
  std::vector<int64_t> strides = strides_;
  shape.erase(shape.begin() + w);
  strides.erase(strides.begin() + w);
  return Tensor(storage_, shape, strides, offset_ + i * strides_[size_t(w)], dtype_);
}

Tensor Tensor::squeeze(int64_t d) const {
  int64_t w = wrap_dim(d, dim(), "squeeze");
  if (shape_[size_t(w)] != 1) return *this;
  Shape shape = shape_;
  std::vector<int64_t> strides = strides_;
  shape.erase(shape.begin() + w);
  strides.erase(strides.begin() + w);
  return Tensor(storage_, shape, strides, offset_, dtype_);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  int64_t w = wrap_dim(d, dim() + 1, "unsqueeze");
  Shape shape = shape_;
  std::vector<int64_t> strides = strides_;
  int64_t stride = w < dim() ? strides_[size_t(w)] * shape_[size_t(w)] : 1;
  shape.insert(shape.begin() + w, 1);
  strides.insert(strides.begin() + w, stride);
  return Tensor(storage_, shape, strides, offset_, dtype_);
}

Tensor Tensor::expand(const Shape& shape) const {
  MOH_CHECK(shape.size() >= shape_.size(), "expand: cannot expand ", shape_, " to fewer dims ", shape);
  size_t lead = shape.size() - shape_.size();
  Shape out_shape(shape.size());
  std::vector<int64_t> strides(shape.size(), 0);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i < lead) {
      MOH_CHECK(shape[i] >= 0, "expand: size ", shape[i], " invalid for a new leading dim in ", shape);
      out_shape[i] = shape[i];
      continue;
    }
    int64_t have = shape_[i - lead], want = shape[i] == -1 ? have : shape[i];
    MOH_CHECK(have == want || have == 1, "expand: cannot expand ", shape_, " to ", shape, " (dim ", i, ": ", have,
              " to ", want, ")");
    out_shape[i] = want;
    strides[i] = have == want ? strides_[i - lead] : 0;
  }
  return Tensor(storage_, out_shape, strides, offset_, dtype_);
}

// ------------------------------------------------------------------------------------- copies

void Tensor::copy_(const Tensor& src) {
  MOH_CHECK(defined() && src.defined(), "copy_: undefined tensor");
  if (src.device() != device()) return copy_(src.to(device()));  // move the bytes, then cast/broadcast here
  Tensor expanded = src.shape() == shape_ ? src : src.expand(shape_);
  MOH_BACKEND(device(), copy, *this, expanded);
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const {
  Tensor out = empty(shape_, dtype_, device());
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == dtype_) return *this;
  Tensor out = empty(shape_, dtype, device());
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(Device device) const {
  if (device == this->device()) return *this;
#if defined(MOH_WITH_CUDA)
  Tensor src = contiguous();
  Tensor out = empty(shape_, dtype_, device);
  cuda::copy_bytes(out.raw_data(), device, src.raw_data(), src.device(), nbytes());
  return out;
#else
  MOH_FAIL("Tensor::to: cannot move a tensor from ", this->device(), " to ", device,
           ": this build has no CUDA backend (configure with -DMOH_CUDA=ON)");
#endif
}

// ------------------------------------------------------------------------------------- host access

template <class T>
std::vector<T> Tensor::to_vector() const {
  Tensor host = to(Device::cpu()).to(dtype_of<T>).contiguous();
  const T* p = host.data<T>();
  return std::vector<T>(p, p + host.numel());
}

template <class T>
T Tensor::item() const {
  MOH_CHECK(numel() == 1, "item: expected a tensor with one element, got shape ", shape_);
  return to_vector<T>()[0];
}

#define MOH_INSTANTIATE_HOST_ACCESS(T)                      \
  template std::vector<T> Tensor::to_vector<T>() const;    \
  template T Tensor::item<T>() const;
MOH_INSTANTIATE_HOST_ACCESS(float)
MOH_INSTANTIATE_HOST_ACCESS(double)
MOH_INSTANTIATE_HOST_ACCESS(BFloat16)
MOH_INSTANTIATE_HOST_ACCESS(Float16)
MOH_INSTANTIATE_HOST_ACCESS(int32_t)
MOH_INSTANTIATE_HOST_ACCESS(int64_t)
MOH_INSTANTIATE_HOST_ACCESS(uint8_t)
MOH_INSTANTIATE_HOST_ACCESS(bool)
#undef MOH_INSTANTIATE_HOST_ACCESS

std::string describe(const Tensor& t) {
  if (!t.defined()) return "undefined tensor";
  return str_cat(dtype_name(t.dtype()), shape_str(t.shape()), " on ", t.device());
}

namespace {

void print_values(std::ostringstream& out, const std::vector<double>& v, const Shape& shape,
                  const std::vector<int64_t>& strides, size_t d, int64_t base, int64_t max_per_dim,
                  bool integral) {
  if (d == shape.size()) {
    if (integral) out << int64_t(v[size_t(base)]);
    else out << v[size_t(base)];
    return;
  }
  out << "[";
  int64_t n = shape[d];
  for (int64_t i = 0; i < n; ++i) {
    if (n > max_per_dim && i == max_per_dim / 2) {
      out << "..., ";
      i = n - max_per_dim / 2;
    }
    print_values(out, v, shape, strides, d + 1, base + i * strides[d], max_per_dim, integral);
    if (i + 1 < n) out << (d + 1 == shape.size() ? ", " : ",\n" + std::string(d + 1, ' '));
  }
  out << "]";
}

}  // namespace

std::string Tensor::str(int64_t max_per_dim) const {
  if (!defined()) return "Tensor(undefined)";
  std::ostringstream out;
  out.precision(4);
  out << "Tensor(";
  print_values(out, to_vector<double>(), shape_, contiguous_strides(shape_), 0, 0, std::max<int64_t>(max_per_dim, 2),
               !is_floating(dtype_));
  out << ", " << describe(*this) << ")";
  return out.str();
}

std::ostream& operator<<(std::ostream& out, const Tensor& t) { return out << t.str(); }

}  // namespace moh
