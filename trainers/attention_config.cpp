// The shared attention keys and their validation (see attention_config.h).
#include "trainers/attention_config.h"

namespace moh {

void add_attention_keys(config::Schema& s) {
  using config::Key;
  s.add(Key::IntList("model.block_heads",
                     "attention heads of each block, one value per block (or one for all), in place of "
                     "model.heads (the paper's MoH-DiT-L/XL grow them with depth); [] = model.heads everywhere")
            .def(std::vector<int64_t>{})
            .min(1));
  s.add(Key::Enum("model.attention", {"mha", "moh"}, "attention of every block: multi-head or Mixture-of-Head")
            .def("mha"));
  s.add(Key::IntList("model.shared_heads", "moh: always-on heads, one value for all blocks or one per block")
            .def(std::vector<int64_t>{})
            .min(0));
  s.add(Key::IntList("model.routed_topk",
                     "moh: routed heads picked per token (top-K), one value or one per block; 0 = all-shared block")
            .def(std::vector<int64_t>{})
            .min(0));
  s.add(Key::Enum("model.moh_execution", {"sparse", "dense"},
                  "moh: compute only the selected heads (sparse) or every head masked (dense, the paper's code)")
            .def("sparse"));
  s.add(Key::Enum("model.moh_projections", {"auto", "gathered", "dense"},
                  "moh sparse: the selected heads' query and output projections per head over their rows "
                  "(gathered), as one GEMM over every head (dense), or chosen by head share and width (auto); "
                  "the same function either way")
            .def("auto"));
  s.add(Key::Enum("model.moh_router", {"learned", "query_norm"},
                  "moh: a learned router with a load-balance loss (the paper's training recipe), or the "
                  "parameter-free query-norm router of the LLaMA3 conversion")
            .def("learned"));
}

AttentionSpec attention_spec_from_config(const Config& cfg, int64_t depth, int64_t heads) {
  const bool moh = cfg.get_string("model.attention") == "moh";
  const auto& shared = cfg.get_int_list("model.shared_heads");
  const auto& topk = cfg.get_int_list("model.routed_topk");
  if (moh && (shared.empty() || topk.empty()))
    throw ConfigError(str_cat(cfg.origin("model.attention"),
                              ": model.attention: moh needs model.shared_heads and model.routed_topk"));
  if (!moh && (!shared.empty() || !topk.empty()))
    throw ConfigError(str_cat(cfg.origin(shared.empty() ? "model.routed_topk" : "model.shared_heads"),
                              ": model.shared_heads/routed_topk are set but model.attention is mha"));
  AttentionSpec spec;
  spec.heads = cfg.get_int_list("model.block_heads");
  try {
    spec.validate(depth, heads);  // the head counts alone, so that their errors name their key
  } catch (const Error& e) {
    throw ConfigError(str_cat(cfg.origin("model.block_heads"), ": ", e.what()));
  }
  if (moh) spec.shared_heads = shared, spec.routed_topk = topk;
  spec.execution = cfg.get_string("model.moh_execution") == "dense" ? MoHExecution::Dense : MoHExecution::Sparse;
  spec.projections = *moh_projections_from_name(cfg.get_string("model.moh_projections"));  // an Enum key
  spec.router = cfg.get_string("model.moh_router") == "query_norm" ? MoHRouter::QueryNorm : MoHRouter::Learned;
  try {
    spec.validate(depth, heads);
  } catch (const Error& e) {
    throw ConfigError(str_cat(cfg.origin("model.shared_heads"), ": ", e.what()));
  }
  return spec;
}

}  // namespace moh
