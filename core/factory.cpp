// Tensor factories: fills, ranges and host data.
#include "core/factory.h"

#include <cmath>
#include <cstring>

#include "core/ops.h"

namespace moh {

Tensor full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = Tensor::empty(shape, dtype, device);
  fill_(t, value);
  return t;
}
Tensor zeros(const Shape& shape, DType dtype, Device device) { return full(shape, 0.0, dtype, device); }
Tensor ones(const Shape& shape, DType dtype, Device device) { return full(shape, 1.0, dtype, device); }
Tensor scalar_tensor(double value, DType dtype, Device device) { return full({}, value, dtype, device); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype(), t.device()); }
Tensor empty_like(const Tensor& t) { return Tensor::empty(t.shape(), t.dtype(), t.device()); }

Tensor arange(double start, double end, double step, DType dtype, Device device) {
  MOH_CHECK(step != 0, "arange: step must be non-zero");
  double count = std::ceil((end - start) / step);
  int64_t n = count > 0 ? int64_t(count) : 0;
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[size_t(i)] = start + double(i) * step;
  return from_vector(values, {n}, dtype, device);
}

Tensor arange(int64_t end, DType dtype, Device device) { return arange(0.0, double(end), 1.0, dtype, device); }

template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, DType dtype, Device device) {
  MOH_CHECK(int64_t(values.size()) == shape_numel(shape), "from_vector: ", values.size(),
            " values do not fill shape ", shape, " (", shape_numel(shape), " elements)");
  auto host = std::make_shared<Storage>(values.size() * sizeof(T), Device::cpu());
  if (!values.empty()) std::memcpy(host->data(), values.data(), values.size() * sizeof(T));
  Tensor src(host, shape, contiguous_strides(shape), 0, dtype_of<T>);
  return src.to(dtype).to(device);
}

template Tensor from_vector<float>(const std::vector<float>&, const Shape&, DType, Device);
template Tensor from_vector<double>(const std::vector<double>&, const Shape&, DType, Device);
template Tensor from_vector<int32_t>(const std::vector<int32_t>&, const Shape&, DType, Device);
template Tensor from_vector<int64_t>(const std::vector<int64_t>&, const Shape&, DType, Device);
template Tensor from_vector<uint8_t>(const std::vector<uint8_t>&, const Shape&, DType, Device);
template Tensor from_vector<BFloat16>(const std::vector<BFloat16>&, const Shape&, DType, Device);
template Tensor from_vector<Float16>(const std::vector<Float16>&, const Shape&, DType, Device);

}  // namespace moh
