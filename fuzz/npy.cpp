// Fuzz target: the .npy reader (core/io/npy.h) on bytes in memory (parse_npy, as the .npz reader hands it
// members) and on a file (load_npy, as fast-DiT latent folders reach it).
#include "core/io/npy.h"

#include "core/factory.h"
#include "core/ops.h"
#include "data/image_decode.h"  // read_file_bytes
#include "fuzz/fuzz_target.h"

namespace {

void read(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    moh::parse_npy(bytes, "fuzz input");
  } catch (const moh::Error&) {
  }
  moh::load_npy(moh::fuzz::scratch_file("input.npy", data, size));
}

void seeds(const moh::fuzz::AddSeed& add) {
  using namespace moh;
  const std::string path = (fuzz::scratch_dir() / "seed.npy").string();
  auto add_file = [&](const std::string& name, const Tensor& t) {
    save_npy(path, t);
    add(name, read_file_bytes(path));
  };
  const Tensor base = arange(-3.0, 3.0, 1.0, DType::Float64).view({2, 3});
  add_file("f32_latent.npy", full({1, 4, 2, 2}, 0.5));
  add_file("f64.npy", base);
  add_file("f16.npy", base.to(DType::Float16));
  add_file("i32.npy", base.to(DType::Int32));
  add_file("i64_label.npy", full({1}, 7, DType::Int64));
  add_file("u8_nhwc.npy", moh::add(base, 3.0).to(DType::UInt8).view({1, 2, 3, 1}));
  add_file("bool.npy", gt(base, 0.5));
  add_file("scalar.npy", scalar_tensor(2.5, DType::Float64));
  add_file("empty.npy", zeros({0, 3}));
  // What other NumPy writers produce: Fortran order, big-endian, a version 2.0 header.
  auto with_header = [](int major, const std::string& dict, const std::string& data) {
    std::string header = dict;
    const size_t preamble = major == 1 ? 10 : 12;
    header.append((64 - (preamble + header.size() + 1) % 64) % 64, ' ');
    header += '\n';
    std::string out = "\x93NUMPY";
    out += char(major);
    out += '\0';
    for (size_t i = 0; i < preamble - 8; ++i) out += char((header.size() >> (8 * i)) & 0xff);
    out += header + data;
    return fuzz::Bytes(out.begin(), out.end());
  };
  add("fortran.npy", with_header(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 2), }",
                                 std::string("\0\0\0\0\2\0\0\0\1\0\0\0\3\0\0\0", 16)));
  add("big_endian.npy",
      with_header(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", std::string("\x3f\xc0\0\0", 4)));
  add("v2.npy", with_header(2, "{'descr': '|u1', 'fortran_order': False, 'shape': (3L,), }", "abc"));
}

}  // namespace

MOH_FUZZ_TARGET(read, seeds)
