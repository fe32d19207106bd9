// Fuzz target: read_idx (data/idx.h) through its gzip path. The input is the decompressed content and is
// gzipped before reading, so mutations reach the IDX parser instead of failing gzip's CRC.
#include "data/idx.h"

#include "fuzz/idx_seeds.h"

namespace {

void read(const uint8_t* data, size_t size) {
  const moh::fuzz::Bytes gz = moh::fuzz::gzip(data, size);
  moh::read_idx(moh::fuzz::scratch_file("input.idx.gz", gz.data(), gz.size()));
}

void seeds(const moh::fuzz::AddSeed& add) {
  for (const auto& [name, bytes] : moh::fuzz::idx_seed_files()) add(name, bytes);
}

}  // namespace

MOH_FUZZ_TARGET(read, seeds)
