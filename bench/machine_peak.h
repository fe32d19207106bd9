// Reference ceilings measured on the running machine, so benchmark numbers read as a share of what
// the hardware can do: the FMA throughput of AVX2 registers (float32 FLOP/s) and memcpy bandwidth.
// Both are measured once per process (median of several runs) with the OpenMP pool's thread count.
#pragma once

namespace moh::bench {

double fma_peak_gflops();   // float32 GFLOP/s with all pool threads issuing independent FMAs
double copy_bandwidth_gbs();  // GB/s of (read + write) bytes for a 256 MiB parallel memcpy

}  // namespace moh::bench
