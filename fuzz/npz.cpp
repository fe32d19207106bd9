// Fuzz target: load_npz (core/io/npz.h) on a file, as ADM reference batches and FID statistics reach it.
#include "core/io/npz.h"

#include <filesystem>

#include "core/factory.h"
#include "core/ops.h"
#include "data/image_decode.h"  // read_file_bytes
#include "fuzz/fuzz_target.h"

namespace {

void read(const uint8_t* data, size_t size) { moh::load_npz(moh::fuzz::scratch_file("input.npz", data, size)); }

void seeds(const moh::fuzz::AddSeed& add) {
  using namespace moh;
  const std::string path = (fuzz::scratch_dir() / "seed.npz").string();
  auto add_file = [&](const std::string& name, const std::map<std::string, Tensor>& arrays) {
    save_npz(path, arrays);
    add(name, read_file_bytes(path));
  };
  const Tensor base = arange(-3.0, 3.0, 1.0, DType::Float64).view({2, 3});
  add_file("samples.npz", {{"arr_0", moh::add(base, 3.0).to(DType::UInt8).view({1, 2, 3, 1})}});
  add_file("stats.npz", {{"mu", base.select(0, 0).contiguous()}, {"sigma", base}});
  add_file("empty.npz", {});
  // NumPy's own archives (stored and deflated members, zip64 local extras), when run from the repository root
  // as scripts/fuzz.sh --seeds does.
  for (const char* name : {"numpy_savez.npz", "numpy_savez_compressed.npz"}) {
    const std::string fixture = std::string("tests/reference/fixtures/") + name;
    if (std::filesystem::exists(fixture)) add(name, read_file_bytes(fixture));
  }
}

}  // namespace

MOH_FUZZ_TARGET(read, seeds)
