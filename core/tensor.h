// Tensor: a typed, strided view of a reference-counted Storage.
// Invariants: shape and strides have one entry per dim; strides and offset count elements (not
// bytes); views (view, permute, narrow, expand, ...) share storage and never copy; expand gives
// stride 0 on broadcast dims, so such tensors must not be written through. A default-constructed
// Tensor is "undefined" (no storage) and is used for optional arguments.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/shape.h"
#include "core/storage.h"

namespace moh {

class Tensor {
 public:
  Tensor() = default;
  // Uninitialised memory of the given shape, contiguous.
  static Tensor empty(const Shape& shape, DType dtype = DType::Float32, Device device = Device::cpu());
  // Wraps an existing storage (used by views and loaders); checks that the view fits.
  Tensor(std::shared_ptr<Storage> storage, Shape shape, std::vector<int64_t> strides, int64_t offset,
         DType dtype);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int64_t dim() const { return int64_t(shape_.size()); }
  int64_t size(int64_t d) const;    // negative d counts from the end
  int64_t stride(int64_t d) const;
  int64_t offset() const { return offset_; }
  int64_t numel() const { return shape_numel(shape_); }
  DType dtype() const { return dtype_; }
  Device device() const;
  size_t element_size() const { return dtype_size(dtype_); }
  size_t nbytes() const { return size_t(numel()) * element_size(); }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  bool shares_storage(const Tensor& other) const { return storage_ && storage_ == other.storage_; }

  // Address of element 0 of this view (storage base + offset).
  void* raw_data() const;
  // Typed pointer to element 0; throws when T does not match dtype().
  template <class T> T* data() const {
    MOH_CHECK(dtype_of<T> == dtype_, "Tensor::data<", dtype_name(dtype_of<T>), ">: tensor holds ",
              dtype_name(dtype_));
    return static_cast<T*>(raw_data());
  }

  // ---- Views (no copy) ----
  Tensor view(const Shape& shape) const;         // needs a compatible stride layout; one -1 allowed
  Tensor reshape(const Shape& shape) const;      // a view when possible, else a contiguous copy
  Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor t() const { return transpose(-2, -1); }
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;  // Python rules
  Tensor select(int64_t dim, int64_t index) const;  // drops `dim`
  Tensor squeeze(int64_t dim) const;                // no-op unless size(dim) == 1
  Tensor unsqueeze(int64_t dim) const;
  Tensor expand(const Shape& shape) const;          // broadcast (stride 0), -1 keeps a size

  // ---- Copies ----
  Tensor contiguous() const;          // this when already contiguous
  Tensor clone() const;               // always a fresh contiguous copy
  Tensor to(DType dtype) const;       // this when already of dtype
  Tensor to(Device device) const;     // this when already on device
  // Copies src into this tensor elementwise, broadcasting src and casting its dtype.
  void copy_(const Tensor& src);

  // ---- Host access ----
  template <class T> T item() const;  // the one element of a 1-element tensor, cast to T
  template <class T> std::vector<T> to_vector() const;  // all elements in logical order, cast to T
  std::string str(int64_t max_per_dim = 6) const;

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_;
  std::vector<int64_t> strides_;
  int64_t offset_ = 0;
  DType dtype_ = DType::Float32;
};

std::ostream& operator<<(std::ostream& out, const Tensor& t);

// Short description for error messages: "float32[2, 3] on cpu".
std::string describe(const Tensor& t);

}  // namespace moh
