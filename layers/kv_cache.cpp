// KvCache: preallocated key/value storage, appended in place (see kv_cache.h).
#include "layers/kv_cache.h"

#include "core/error.h"

namespace moh {

KvCache::KvCache(const KvCacheShape& shape, DType dtype, Device device) : shape_(shape) {
  MOH_CHECK(shape.batch > 0 && shape.kv_heads > 0 && shape.max_length > 0 && shape.head_dim > 0,
            "KvCache: batch, kv_heads, max_length and head_dim must be positive, got [", shape.batch, ", ",
            shape.kv_heads, ", ", shape.max_length, ", ", shape.head_dim, "]");
  const Shape full{shape.batch, shape.kv_heads, shape.max_length, shape.head_dim};
  k_ = Tensor::empty(full, dtype, device);
  v_ = Tensor::empty(full, dtype, device);
}

void KvCache::append(const Tensor& k, const Tensor& v) {
  const int64_t tokens = k.defined() && k.dim() == 4 ? k.size(2) : 0;
  const Shape expected{shape_.batch, shape_.kv_heads, tokens, shape_.head_dim};
  MOH_CHECK(k.defined() && v.defined() && tokens > 0 && k.shape() == expected && v.shape() == expected,
            "KvCache: append expects keys and values [", shape_.batch, ", ", shape_.kv_heads, ", Tnew, ",
            shape_.head_dim, "], got ", k.defined() ? describe(k) : "undefined", " and ",
            v.defined() ? describe(v) : "undefined");
  MOH_CHECK(length_ + tokens <= shape_.max_length, "KvCache: full: ", length_, " cached positions + ", tokens,
            " new exceed its max_length ", shape_.max_length, " (create the cache with a larger max length)");
  k_.narrow(2, length_, tokens).copy_(k);
  v_.narrow(2, length_, tokens).copy_(v);
  length_ += tokens;
}

Tensor KvCache::keys() const { return k_.narrow(2, 0, length_); }
Tensor KvCache::values() const { return v_.narrow(2, 0, length_); }

}  // namespace moh
