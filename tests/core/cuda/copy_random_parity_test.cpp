// CUDA vs CPU parity of copies and random streams: Tensor::to(cuda) and back for every dtype;
// every dtype-pair cast on the GPU, byte-exact with the CPU's (contiguous and strided sources,
// into strided destinations); contiguous() of transposed, sliced, permuted and expanded views;
// fill_ of every dtype; uniform/normal/bernoulli bit-identical for one Generator state on both
// devices (every dtype, odd sizes, a million normals); dropout's mask identical on both devices.
#include <iterator>
#include <string>
#include <vector>

#include "core/factory.h"
#include "core/ops.h"
#include "core/random.h"
#include "tests/core/cuda/parity.h"

namespace moh {
namespace {

using test::cpu;
using test::expect_same_bytes;
using test::gpu;

const DType kAll[] = {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16,
                      DType::Int32,   DType::Int64,   DType::UInt8,    DType::Bool};

std::string pair_name(DType from, DType to) {
  return std::string(dtype_name(from)) + " -> " + std::string(dtype_name(to));
}

// Values stored as `from` that casting to `to` keeps free of undefined behaviour: fractions
// (truncated by integer casts), zeros (false as bool) and, unless uint8 is involved with a float,
// negatives (a negative float to uint8 is undefined in C++, and the CUDA cast saturates).
Tensor cast_source(const Shape& shape, DType from, DType to, uint64_t seed) {
  Tensor x = mul(test::rand_t(shape, seed, DType::Float64), 120.0);
  if (from == DType::UInt8 || (is_floating(from) && to == DType::UInt8)) x = abs(x);
  x = masked_fill(x, lt(abs(x), 15.0), 0.0);
  return x.to(from);
}

TEST(CudaParityCopy, RoundTripEveryDtype) {
  MOH_REQUIRE_GPU();
  for (DType d : kAll) {
    const Tensor x = cast_source({23, 37}, d, d, 1);
    const Tensor g = gpu(x);
    EXPECT_TRUE(g.device().is_cuda());
    expect_same_bytes(cpu(g), x, "round trip " + std::string(dtype_name(d)));
    expect_same_bytes(cpu(gpu(x.t())), x.t().contiguous(), "round trip of a view " + std::string(dtype_name(d)));
  }
}

TEST(CudaParityCopy, EveryDtypePairCastIsByteExact) {
  MOH_REQUIRE_GPU();
  for (DType from : kAll)
    for (DType to : kAll) {
      const Tensor x = cast_source({23, 37}, from, to, 2), xg = gpu(x);
      const Tensor want = x.to(to);
      expect_same_bytes(cpu(xg.to(to)), want, pair_name(from, to));
      expect_same_bytes(cpu(test::strided_like(xg).to(to)), want, pair_name(from, to) + " strided source");
      Tensor dst = gpu(zeros({37, 23}, to)).t();  // strided destination
      dst.copy_(xg);
      expect_same_bytes(cpu(dst).contiguous(), want, pair_name(from, to) + " into a strided destination");
    }
}

// Integers beyond float precision round to nearest even; beyond float16's range they become inf.
TEST(CudaParityCopy, LargeIntegersRoundLikeTheCpu) {
  MOH_REQUIRE_GPU();
  const int64_t big = int64_t(1) << 40;
  const Tensor x = from_vector<int64_t>({big + 1, -big - 3, (int64_t(1) << 24) + 1, 65519, 65520, -70000, 255, 256},
                                        {8});
  for (DType to : {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16, DType::Int32, DType::UInt8})
    expect_same_bytes(cpu(gpu(x).to(to)), x.to(to), pair_name(DType::Int64, to));
}

TEST(CudaParityCopy, ContiguousOfViews) {
  MOH_REQUIRE_GPU();
  using View = Tensor (*)(const Tensor&);
  const View views[] = {
      [](const Tensor& t) { return t.transpose(0, 2); },
      [](const Tensor& t) { return t.slice(1, 1, 33, 3); },
      [](const Tensor& t) { return t.permute({2, 0, 1}).narrow(0, 2, 5); },
      [](const Tensor& t) { return t.select(1, 4).unsqueeze(1).expand({6, 9, 11}); },  // stride 0
      [](const Tensor& t) { return t.slice(0, 0, 1).expand({40, 35, 11}); },  // broadcast of a block
  };
  for (DType d : {DType::Float32, DType::Int64, DType::BFloat16, DType::Bool, DType::UInt8}) {
    const Tensor x = cast_source({6, 35, 11}, d, d, 3);
    const Tensor xg = gpu(x);
    for (size_t i = 0; i < std::size(views); ++i) {
      const Tensor got = views[i](xg).contiguous();
      EXPECT_TRUE(got.is_contiguous());
      expect_same_bytes(cpu(got), views[i](x).contiguous(), std::string(dtype_name(d)) + " view " + std::to_string(i));
    }
  }
}

TEST(CudaParityCopy, FillEveryDtypeAndStridedViews) {
  MOH_REQUIRE_GPU();
  for (DType d : kAll)
    for (double v : {0.0, 1.0, -2.75, 3.3, 1e-50}) {
      const std::string name = std::string(dtype_name(d)) + " " + std::to_string(v);
      if (d == DType::UInt8 && v < 0) continue;  // a negative double to uint8 is undefined
      expect_same_bytes(cpu(full({7, 33}, v, d, Device::cuda(0))), full({7, 33}, v, d), "full " + name);
      Tensor c = zeros({33, 7}, d), g = gpu(c);
      Tensor cv = c.t().slice(1, 1, 33, 2), gv = g.t().slice(1, 1, 33, 2);
      fill_(cv, v);
      fill_(gv, v);
      expect_same_bytes(cpu(g), c, "fill_ of a strided view " + name);
    }
}

// One Generator state on each device gives the same bytes and advances both the same way.
template <class Draw>
void expect_same_stream(const std::string& what, DType dtype, int64_t n, Draw draw) {
  Generator on_cpu(1234, 17), on_gpu(1234, 17);
  const Tensor c = draw({n}, on_cpu, dtype, Device::cpu());
  const Tensor g = draw({n}, on_gpu, dtype, Device::cuda(0));
  EXPECT_TRUE(g.device().is_cuda());
  expect_same_bytes(cpu(g), c, what + " " + std::string(dtype_name(dtype)) + " n=" + std::to_string(n));
  EXPECT_EQ(on_gpu.offset(), on_cpu.offset()) << what;
}

// Every dtype and odd sizes; uniform and normal skip uint8 (their negative draws cast to uint8
// are undefined).
TEST(CudaParityRandom, StreamsAreBitIdenticalToTheCpu) {
  MOH_REQUIRE_GPU();
  for (DType d : kAll)
    for (int64_t n : {int64_t(1), int64_t(1001), int64_t(4099)}) {
      if (d != DType::UInt8) {
        expect_same_stream("uniform", d, n, [](const Shape& s, Generator& g, DType t, Device dev) {
          return uniform(s, -2.0, 3.0, g, t, dev);
        });
        expect_same_stream("normal", d, n, [](const Shape& s, Generator& g, DType t, Device dev) {
          return normal(s, 0.5, 2.0, g, t, dev);
        });
      }
      expect_same_stream("bernoulli", d, n, [](const Shape& s, Generator& g, DType t, Device dev) {
        return bernoulli(s, 0.3, g, t, dev);
      });
    }
  // Many draws: every element's Box-Muller log and cos/sin agree (no libm in philox_normal).
  const int64_t many = (int64_t(1) << 20) + 3;
  for (DType d : {DType::Float32, DType::Float64}) {
    expect_same_stream("normal", d, many, [](const Shape& s, Generator& g, DType t, Device dev) {
      return normal(s, 0.0, 1.0, g, t, dev);
    });
    expect_same_stream("uniform", d, many, [](const Shape& s, Generator& g, DType t, Device dev) {
      return uniform(s, -1.0, 1.0, g, t, dev);
    });
  }
}

// The same seed gives the same mask on both devices; out = x * 1/(1-p) where kept, to 1e-6.
TEST(CudaParityDropout, MaskIdenticalOnBothDevices) {
  MOH_REQUIRE_GPU();
  const Tensor x32 = test::rand_t({37, 301}, 4);
  for (DType d : {DType::Float32, DType::Float64, DType::BFloat16, DType::Float16})
    for (double p : {0.0, 0.1, 0.5, 1.0}) {
      const std::string name = std::string(dtype_name(d)) + " p=" + std::to_string(p);
      const Tensor x = x32.to(d), xg = test::strided_like(gpu(x));  // the front end makes x contiguous
      const DType ref = d == DType::Float64 ? DType::Float64 : DType::Float32;
      Generator on_cpu(99, 5), on_gpu(99, 5);
      const DropoutForward c = dropout(x.to(ref), p, on_cpu), g = dropout(xg, p, on_gpu);
      expect_same_bytes(cpu(g.mask), c.mask, "dropout mask " + name);
      EXPECT_EQ(on_gpu.offset(), on_cpu.offset()) << name;
      // 16-bit outputs round x * scale once (2^-9 / 2^-11 relative).
      const double rtol = d == DType::BFloat16 ? 4e-3 : (d == DType::Float16 ? 1e-3 : 1e-6);
      test::expect_close(cpu(g.out).to(ref), c.out, rtol, 1e-6, "dropout out " + name);
    }
  // An odd length (not a multiple of the four elements of a Philox block).
  Generator on_cpu(7), on_gpu(7);
  const Tensor odd = test::rand_t({4 * 1000 + 3}, 5);
  expect_same_bytes(cpu(dropout(gpu(odd), 0.3, on_gpu).mask), dropout(odd, 0.3, on_cpu).mask, "odd-length mask");
}

}  // namespace
}  // namespace moh
