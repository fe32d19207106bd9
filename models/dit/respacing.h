// Timestep respacing (improved-diffusion's respace.py): which steps of a base process a shorter
// process keeps, and the betas of the shorter process, chosen so that its alphas_cumprod are exactly
// the base process's at the kept steps. The model was trained on base timesteps, so the respaced
// process carries a timestep map: step i of it is base step timestep_map[i].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace moh {

// The kept base steps, ascending, for a spec:
//  - "" : every step;
//  - "N" or "N1,N2,...": the base steps split into as many equal sections (the first
//    base_steps % sections sections one step longer), section k strided to Nk steps (its first and
//    last step kept, the rest at a fractional stride rounded to the nearest, ties to even);
//  - "ddimN": the DDIM paper's fixed stride: 0, s, 2s, ... with the smallest integer stride s that
//    gives exactly N steps.
// Throws (moh::Error) naming the spec when it is malformed, a section asks for more steps than it
// has, or no integer stride gives N steps.
std::vector<int64_t> space_timesteps(int64_t base_steps, const std::string& spec);

struct RespacedProcess {
  std::vector<double> betas;          // beta_i = 1 - alphas_cumprod[k_i] / alphas_cumprod[k_{i-1}]
  std::vector<int64_t> timestep_map;  // k_i: the base step of each new step
};

// base_alphas_cumprod: the base process's table; kept: ascending distinct steps in range.
RespacedProcess respace(const std::vector<double>& base_alphas_cumprod, const std::vector<int64_t>& kept);

}  // namespace moh
