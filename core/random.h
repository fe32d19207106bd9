// Generator: a Philox stream position (seed, offset). Each random call reads counters starting
// at `offset` and advances it past what it used, so the same seed gives the same numbers on every
// device and a saved (seed, offset) resumes the exact stream. Not thread-safe; one per consumer.
#pragma once

#include <cstdint>

#include "core/tensor.h"

namespace moh {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0, uint64_t offset = 0) : seed_(seed), offset_(offset) {}
  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  void set_state(uint64_t seed, uint64_t offset) { seed_ = seed; offset_ = offset; }
  // Returns the current offset and advances it by `counters` Philox blocks.
  uint64_t reserve(uint64_t counters) {
    uint64_t at = offset_;
    offset_ += counters;
    return at;
  }

 private:
  uint64_t seed_;
  uint64_t offset_;
};

// Counters used by uniform/bernoulli (4 words each) and normal (2 values each) for n elements.
inline uint64_t uniform_counters(int64_t n) { return uint64_t((n + 3) / 4); }
inline uint64_t normal_counters(int64_t n) { return uint64_t((n + 1) / 2); }

Tensor uniform(const Shape& shape, double low, double high, Generator& gen,
               DType dtype = DType::Float32, Device device = Device::cpu());
Tensor normal(const Shape& shape, double mean, double std, Generator& gen,
              DType dtype = DType::Float32, Device device = Device::cpu());
// 1 with probability p, else 0, as `dtype`.
Tensor bernoulli(const Shape& shape, double p, Generator& gen, DType dtype = DType::Float32,
                 Device device = Device::cpu());

}  // namespace moh
