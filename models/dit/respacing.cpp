// space_timesteps and respace (see respacing.h).
#include "models/dit/respacing.h"

#include <cmath>

#include "core/error.h"

namespace moh {
namespace {

int64_t parse_count(const std::string& text, const std::string& spec) {
  size_t used = 0;
  int64_t value = -1;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  MOH_CHECK(!text.empty() && used == text.size() && text[0] != '+' && text[0] != '-' && value >= 1,
            "diffusion: timestep respacing '", spec, "': '", text,
            "' is not a step count (expected a positive integer, e.g. \"250\", \"10,15,20\" or \"ddim50\")");
  return value;
}

std::vector<int64_t> ddim_steps(int64_t base_steps, int64_t count, const std::string& spec) {
  for (int64_t stride = 1; stride < base_steps; ++stride) {
    if ((base_steps + stride - 1) / stride != count) continue;
    std::vector<int64_t> steps;
    for (int64_t t = 0; t < base_steps; t += stride) steps.push_back(t);
    return steps;
  }
  MOH_FAIL("diffusion: timestep respacing '", spec, "': no integer stride gives exactly ", count, " of ",
           base_steps, " steps");
}

}  // namespace

std::vector<int64_t> space_timesteps(int64_t base_steps, const std::string& spec) {
  MOH_CHECK(base_steps >= 1, "diffusion: space_timesteps needs >= 1 base step, got ", base_steps);
  std::vector<int64_t> steps;
  if (spec.empty()) {
    for (int64_t t = 0; t < base_steps; ++t) steps.push_back(t);
    return steps;
  }
  if (spec.rfind("ddim", 0) == 0) return ddim_steps(base_steps, parse_count(spec.substr(4), spec), spec);
  std::vector<int64_t> counts;
  for (size_t start = 0;;) {
    const size_t comma = spec.find(',', start);
    counts.push_back(parse_count(spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start), spec));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  const int64_t sections = int64_t(counts.size());
  const int64_t size_per = base_steps / sections, extra = base_steps % sections;
  int64_t section_start = 0;
  for (int64_t k = 0; k < sections; ++k) {
    const int64_t size = size_per + (k < extra ? 1 : 0), count = counts[size_t(k)];
    MOH_CHECK(size >= count, "diffusion: timestep respacing '", spec, "': section ", k, " has ", size,
              " steps, cannot take ", count, " of them");
    const double stride = count <= 1 ? 1.0 : double(size - 1) / double(count - 1);
    double at = 0.0;
    for (int64_t i = 0; i < count; ++i, at += stride)
      steps.push_back(section_start + int64_t(std::nearbyint(at)));  // round half to even, as Python's round
    section_start += size;
  }
  return steps;
}

RespacedProcess respace(const std::vector<double>& base_alphas_cumprod, const std::vector<int64_t>& kept) {
  MOH_CHECK(!kept.empty(), "diffusion: respace keeps no step");
  RespacedProcess out;
  double last = 1.0;
  int64_t previous = -1;
  for (int64_t t : kept) {
    MOH_CHECK(t > previous && t < int64_t(base_alphas_cumprod.size()), "diffusion: respace: kept steps must be ",
              "ascending, distinct and below ", base_alphas_cumprod.size(), ", got ", t, " after ", previous);
    const double ac = base_alphas_cumprod[size_t(t)];
    out.betas.push_back(1.0 - ac / last);
    out.timestep_map.push_back(t);
    last = ac;
    previous = t;
  }
  return out;
}

}  // namespace moh
