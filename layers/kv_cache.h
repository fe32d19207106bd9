// KvCache: one attention layer's keys and values for incremental (KV-cached) decoding. Storage is
// preallocated at creation for `max_length` positions, [B, Hkv, max_length, Dh] each for keys and
// values, holding the layer's Hkv key/value heads (grouped-query layers store Hkv, never the heads
// repeated for every query head). Keys are stored normalised and rotated, exactly as attention reads
// them. Positions [0, length()) are filled; append() writes the next ones and throws once the cache
// would exceed max_length. Values only: the cache never enters an autograd tape.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace moh {

struct KvCacheShape {
  int64_t batch = 0;
  int64_t kv_heads = 0;
  int64_t max_length = 0;
  int64_t head_dim = 0;
};

class KvCache {
 public:
  KvCache(const KvCacheShape& shape, DType dtype, Device device);

  // k, v [B, Hkv, Tnew, Dh] go to positions [length(), length() + Tnew).
  void append(const Tensor& k, const Tensor& v);
  // Views of the filled positions, [B, Hkv, length(), Dh] (row stride Dh, unit last stride).
  Tensor keys() const;
  Tensor values() const;
  // Forgets every position (the storage stays allocated).
  void clear() { length_ = 0; }

  int64_t length() const { return length_; }
  const KvCacheShape& shape() const { return shape_; }
  DType dtype() const { return k_.dtype(); }
  Device device() const { return k_.device(); }

 private:
  KvCacheShape shape_;
  Tensor k_, v_;
  int64_t length_ = 0;
};

}  // namespace moh
