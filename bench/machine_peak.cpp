// FMA-throughput and copy-bandwidth probes (see machine_peak.h).
#include "bench/machine_peak.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <vector>

namespace moh::bench {
namespace {

template <class Fn>
double median_seconds(Fn&& fn, int reps) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto start = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::nth_element(t.begin(), t.begin() + reps / 2, t.end());
  return t[size_t(reps / 2)];
}

// 12 independent accumulators hide the FMA latency; returns a value so the work is not elided.
__attribute__((target("avx2,fma"))) float fma_loop(long iters) {
  __m256 acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_set1_ps(float(i) * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < iters; ++it)
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_fmadd_ps(acc[i], a, b);
  __m256 sum = acc[0];
  for (int i = 1; i < 12; ++i) sum = _mm256_add_ps(sum, acc[i]);
  float out[8];
  _mm256_storeu_ps(out, sum);
  return out[0];
}

}  // namespace

double fma_peak_gflops() {
  static const double peak = [] {
    const long iters = 20'000'000;
    volatile float sink = 0;
    double seconds = median_seconds([&] {
#pragma omp parallel
      {
        float v = fma_loop(iters);
        if (v == 12345.f) sink = v;
      }
    }, 5);
    double flops = double(iters) * 12 * 8 * 2 * omp_get_max_threads();
    return flops / seconds / 1e9;
  }();
  return peak;
}

double copy_bandwidth_gbs() {
  static const double bandwidth = [] {
    const size_t bytes = size_t(256) << 20;
    std::vector<char> src(bytes, 1), dst(bytes, 0);
    double seconds = median_seconds([&] {
#pragma omp parallel
      {
        int n = omp_get_num_threads(), id = omp_get_thread_num();
        size_t chunk = bytes / size_t(n);
        std::memcpy(dst.data() + chunk * size_t(id), src.data() + chunk * size_t(id), chunk);
      }
    }, 7);
    return 2.0 * double(bytes) / seconds / 1e9;
  }();
  return bandwidth;
}

}  // namespace moh::bench
