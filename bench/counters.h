// Helpers that turn per-iteration work into Google Benchmark rate counters relative to the machine's
// measured ceilings: GFLOP/s and % of FMA peak for compute-bound ops, GB/s and % of copy bandwidth
// for memory-bound ones.
#pragma once

#include <benchmark/benchmark.h>

#include "bench/machine_peak.h"

namespace moh::bench {

inline void set_flop_counters(benchmark::State& state, double flops_per_iter) {
  const double total = flops_per_iter * double(state.iterations());
  state.counters["GFLOP/s"] = benchmark::Counter(total / 1e9, benchmark::Counter::kIsRate);
  state.counters["%peak"] = benchmark::Counter(total / 1e9 / fma_peak_gflops() * 100, benchmark::Counter::kIsRate);
}

inline void set_byte_counters(benchmark::State& state, double bytes_per_iter) {
  const double total = bytes_per_iter * double(state.iterations());
  state.counters["GB/s"] = benchmark::Counter(total / 1e9, benchmark::Counter::kIsRate);
  state.counters["%copy"] = benchmark::Counter(total / 1e9 / copy_bandwidth_gbs() * 100, benchmark::Counter::kIsRate);
}

}  // namespace moh::bench
