// Shape and stride helpers: element counts, contiguous strides, dim wrapping and NumPy
// broadcasting. Shapes are int64 vectors; a 0-d tensor has an empty shape and one element.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace moh {

using Shape = std::vector<int64_t>;

int64_t shape_numel(const Shape& shape);
Shape contiguous_strides(const Shape& shape);
std::string shape_str(const Shape& shape);  // "[2, 3]"

// Wraps a possibly negative dim into [0, ndim); throws naming `op` when out of range.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

// The NumPy broadcast of two shapes; throws naming `op` and both shapes when incompatible.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

// Strides to read a tensor of (shape, strides) as if it had `target` shape (0 on broadcast dims).
std::vector<int64_t> broadcast_strides(const Shape& shape, const std::vector<int64_t>& strides,
                                       const Shape& target);

}  // namespace moh

namespace std {
ostream& operator<<(ostream& out, const moh::Shape& shape);
}
