// Fuzz target: load_safetensors (core/io/safetensors.h) on a file, as a Hugging Face checkpoint reaches it.
#include "core/io/safetensors.h"

#include "core/factory.h"
#include "core/ops.h"
#include "data/image_decode.h"  // read_file_bytes
#include "fuzz/fuzz_target.h"

namespace {

void read(const uint8_t* data, size_t size) {
  const std::string path = moh::fuzz::scratch_file("input.safetensors", data, size);
  moh::load_safetensors_metadata(path);
  moh::load_safetensors(path);
}

void seeds(const moh::fuzz::AddSeed& add) {
  using namespace moh;
  const std::string path = (fuzz::scratch_dir() / "seed.safetensors").string();
  auto add_file = [&](const std::string& name, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
    save_safetensors(path, tensors, metadata);
    add(name, read_file_bytes(path));
  };
  Tensor base = arange(-3.0, 3.0, 1.0, DType::Float64).view({2, 3});
  add_file("dtypes.safetensors",
           {{"f32", base.to(DType::Float32)},
            {"f64", base},
            {"bf16", base.to(DType::BFloat16)},
            {"f16", base.to(DType::Float16)},
            {"i32", base.to(DType::Int32)},
            {"i64", base.to(DType::Int64)},
            {"u8", moh::add(base, 3.0).to(DType::UInt8)},
            {"bool", gt(base, 0.5)}},
           {{"format", "pt"}});
  add_file("scalar_and_empty.safetensors",
           {{"scalar", scalar_tensor(2.5, DType::Float32)}, {"empty", zeros({0, 3})}}, {});
  add_file("no_tensors.safetensors", {}, {{"note", "metadata only"}});
}

}  // namespace

MOH_FUZZ_TARGET(read, seeds)
