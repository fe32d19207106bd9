// EpochSampler: the order in which a training set is visited. Each epoch is a permutation of [0, n)
// that depends only on (seed, epoch), so the position {epoch, index} is the whole loader state: a
// checkpoint stores it and a resumed run draws exactly the samples the interrupted one would have.
// Per-sample randomness (augmentation) should likewise be a function of (seed, epoch, sample id),
// never of the order in which threads happen to run; sample_generator() gives that stream.
// Distributed runs shard each draw: with world size W, next(count) on rank r takes block r of the
// next count*W ids of the global order, so the ranks see disjoint samples whose union is what one
// process drawing count*W would see, and the position (epoch, index) counts GLOBAL samples: a run
// resumes on any world size at the same global position (keeping the global batch).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/random.h"

namespace moh {

// The permutation of [0, n) for one epoch: Fisher-Yates driven by Philox words of (seed, epoch).
std::vector<int64_t> epoch_permutation(uint64_t seed, int64_t epoch, int64_t n);

// A generator private to one sample of one epoch (for augmentation), independent of the shuffle stream.
Generator sample_generator(uint64_t seed, int64_t epoch, int64_t sample);

// Which block of each draw this process takes.
struct SamplerShard {
  int64_t rank = 0;
  int64_t world = 1;
};
// This process's rank and world size (dist::world()); {0, 1} without a launcher.
SamplerShard process_shard();

class EpochSampler {
 public:
  // `what` names the dataset in errors ("fashion-mnist train").
  EpochSampler(int64_t size, uint64_t seed, std::string what, SamplerShard shard = process_shard());

  // This rank's `count` sample ids of the next count * world, crossing into the next epoch (a new
  // permutation) when one ends. `epochs` (optional) receives the epoch each id was drawn in.
  std::vector<int64_t> next(int64_t count, std::vector<int64_t>* epochs = nullptr);

  int64_t size() const { return size_; }
  int64_t epoch() const { return epoch_; }
  int64_t index() const { return index_; }
  uint64_t seed() const { return seed_; }
  const SamplerShard& shard() const { return shard_; }

  // {"epoch", "index", "shuffle_seed"}; load_state checks the keys, the range and the seed.
  std::map<std::string, int64_t> state() const;
  void load_state(const std::map<std::string, int64_t>& state);

 private:
  int64_t size_;
  uint64_t seed_;
  std::string what_;
  SamplerShard shard_;
  int64_t epoch_ = 0, index_ = 0;  // the global position
  std::vector<int64_t> order_;
};

}  // namespace moh
