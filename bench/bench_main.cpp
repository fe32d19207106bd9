// moh_bench entry point: prints the machine's measured ceilings (FMA peak, copy bandwidth) that the
// per-op counters are relative to, then runs every registered Google Benchmark.
#include <benchmark/benchmark.h>

#include <cstdio>

#include "bench/machine_peak.h"
#include "core/ops.h"

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::printf("moh_bench: %d threads, measured float32 FMA peak %.1f GFLOP/s, copy bandwidth %.1f GB/s\n",
              moh::num_threads(), moh::bench::fma_peak_gflops(), moh::bench::copy_bandwidth_gbs());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
