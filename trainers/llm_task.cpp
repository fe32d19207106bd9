// The LLM task (see llm_task.h): config keys, model and token-window construction, the training
// micro-batch and the validation metrics. Token windows are read on the CPU; the model lives on the
// run's device and each batch of ids moves there.
#include "trainers/llm_task.h"

#include <cmath>
#include <numbers>
#include <set>

#include <nlohmann/json.hpp>

#include "autograd/autograd.h"
#include "core/dist/world.h"
#include "core/io/checked_write.h"
#include "core/factory.h"
#include "core/ops.h"
#include "data/text/token_windows.h"
#include "data/text/tokenizer.h"
#include "trainers/attention_config.h"
#include "trainers/eval_shard.h"
#include "trainers/precision.h"

namespace moh {
namespace {

// Per-head selection rates of the model's MoH blocks, accumulated over evaluation batches as
// rate x tokens (so ranks and batches sum), in block order, H values per MoH block.
struct HeadUsage {
  explicit HeadUsage(const LanguageModel& model) {
    for (size_t b = 0; b < model.blocks.size(); ++b)
      if (const auto* moh = dynamic_cast<const MoHAttention*>(model.blocks[b]->attn.get())) {
        layers.push_back({int64_t(b), moh});
        weighted_rates.resize(weighted_rates.size() + size_t(moh->num_heads()), 0.0);
      }
  }
  void add_last_forward() {
    size_t at = 0;
    for (const auto& [block, moh] : layers) {
      const RoutingStats& stats = moh->last_stats();
      for (double rate : stats.selection_rate) weighted_rates[at++] += rate * double(stats.tokens);
    }
  }
  std::string to_json(double tokens) const {
    nlohmann::json blocks = nlohmann::json::array();
    size_t at = 0;
    for (const auto& [block, moh] : layers) {
      std::vector<double> rates;
      for (int64_t h = 0; h < moh->num_heads(); ++h) rates.push_back(weighted_rates[at++] / tokens);
      blocks.push_back({{"block", block},
                        {"shared_heads", moh->head_split().shared},
                        {"routed_topk", moh->head_split().topk},
                        {"selection_rate", rates}});
    }
    return nlohmann::json{{"tokens", tokens}, {"moh_blocks", blocks}}.dump();
  }

  std::vector<std::pair<int64_t, const MoHAttention*>> layers;
  std::vector<double> weighted_rates;
};

// Philox keys of the task's own streams, derived from run.seed.
constexpr uint64_t kInitKey = 0x11a1, kWindowKey = 0x7e47;

config::Schema llm_schema() {
  using config::Key;
  config::Schema s;
  s.add(Key::Enum("model.preset", {"kjv_tiny", "gpt2_124m", "llm_s", "llm_b"},
                  "named LLM size (models/llm/llm_options.h); the model.* keys below override its fields")
            .def("kjv_tiny"));
  s.add(Key::Enum("model.arch", {"llama", "gpt2"},
                  "LLaMA-style (RMSNorm, RoPE, SwiGLU, no biases) or GPT-2-style (LayerNorm, learned positions, "
                  "GELU Mlp, biases); unset = the preset's")
            .optional());
  s.add(Key::Int("model.vocab_size", "embedding rows (>= the tokenizer's vocabulary; unset = the tokenizer's)")
            .optional()
            .min(1));
  s.add(Key::Int("model.dim", "token width").optional().min(1));
  s.add(Key::Int("model.depth", "number of transformer blocks").optional().min(1));
  s.add(Key::Int("model.heads", "query heads per block").optional().min(1));
  s.add(Key::Int("model.kv_heads", "key/value heads (fewer than model.heads: grouped-query attention; 0 = heads)")
            .optional()
            .min(0));
  s.add(Key::Int("model.head_dim", "width of one head (0 = dim / heads)").optional().min(0));
  s.add(Key::Int("model.mlp_hidden", "hidden width of the feed-forward block (0 = the architecture's default)")
            .optional()
            .min(0));
  s.add(Key::Int("model.max_seq_len", "longest sequence the model accepts (RoPE table, GPT-2 position table)")
            .optional()
            .min(1));
  s.add(Key::Float("model.rope_theta", "llama: RoPE base").optional().min(1));
  s.add(Key::Bool("model.tie_embeddings", "llama: output projection shares the token embedding (gpt2: always)")
            .optional());
  s.add(Key::Bool("model.recompute", "recompute each block's activations in the backward (less memory, ~1/3 "
                                     "more compute)")
            .def(false));
  add_attention_keys(s);

  s.add(Key::String("data.dir", "folder of llm.c token shards: train_*.bin and val_*.bin (moh tokenize --out)"));
  s.add(Key::String("data.tokenizer", "the tokenizer file the shards were made with (bits per byte, moh generate)"));
  s.add(Key::Int("data.seq_len", "tokens per training/validation window (unset = model.max_seq_len)")
            .optional()
            .min(1));
  s.add(Key::Int("data.eval_tokens", "validate on the first N windows' worth of tokens (0 = the whole val split)")
            .def(0)
            .min(0));
  s.add(Key::String("eval.head_usage",
                    "moh eval: also write each MoH block's per-head selection rate over the validation tokens "
                    "to this JSON file")
            .optional());
  return s;
}

LlmOptions::Arch arch_of(const std::string& name) {
  return name == "gpt2" ? LlmOptions::Arch::Gpt2 : LlmOptions::Arch::Llama;
}

int64_t seq_len_of(const Config& cfg, const LlmOptions& o) {
  const int64_t seq_len = cfg.has("data.seq_len") ? cfg.get_int("data.seq_len") : o.max_seq_len;
  if (seq_len > o.max_seq_len)
    throw ConfigError(str_cat(cfg.origin("data.seq_len"), ": data.seq_len ", seq_len, " exceeds model.max_seq_len ",
                              o.max_seq_len));
  return seq_len;
}

class LlmTask final : public Task {
 public:
  explicit LlmTask(const Config& cfg)
      : seed_(uint64_t(cfg.get_int("run.seed"))),
        data_dir_(cfg.get_string("data.dir")),
        tokenizer_path_(cfg.get_string("data.tokenizer")),
        tokenizer_(text::load_tokenizer(tokenizer_path_)),
        tokenizer_vocab_(tokenizer_->vocab_size()),
        options_(llm_options_from_config(cfg, tokenizer_vocab_)),
        seq_len_(seq_len_of(cfg, options_)),
        train_(text::TokenCorpus::from_dir(data_dir_, "train")),
        val_(text::TokenCorpus::from_dir(data_dir_, "val")),
        windows_(train_, seq_len_, seed_ ^ kWindowKey, "llm train"),
        eval_batch_(cfg.get_int("eval.batch_size")),
        head_usage_path_(cfg.has("eval.head_usage") ? cfg.get_string("eval.head_usage") : ""),
        eval_windows_limit_(cfg.get_int("data.eval_tokens") == 0
                                ? -1
                                : std::max<int64_t>(1, cfg.get_int("data.eval_tokens") / seq_len_)),
        device_(training_device(cfg)) {
    for (const auto& [name, id] : tokenizer_->special_tokens()) special_ids_.insert(id);
    Generator init(seed_ ^ kInitKey);
    model_ = std::make_shared<LanguageModel>(options_, init);
    model_->to(device_);
    flops_ = model_->flops_per_token(seq_len_);
  }

  Module& model() override { return *model_; }

  MicroBatchLoss train_micro_batch(int64_t batch_size) override {
    ids_.clear();
    windows_.next(batch_size, ids_);
    auto [inputs, targets] = split_windows(ids_, batch_size);
    LlmOutput out = model_->forward(inputs.to(device_));
    const int64_t rows = batch_size * seq_len_;
    ag::Variable loss = ag::cross_entropy(ag::reshape(out.logits, {rows, options_.vocab_size}),
                                          targets.reshape({rows}).to(device_));
    return {loss, std::move(out.balance_losses), batch_size, rows};
  }

  std::map<std::string, double> evaluate() override {
    ag::NoGradGuard no_grad;
    EvalModeGuard eval_mode(*model_);
    // This rank's share of the validation windows (rank r: windows r, r + W, ...), reduced below.
    text::SequentialTokenWindows windows(val_, seq_len_, "llm val");
    const int64_t world = process_shard().world;
    double loss_sum = 0, bytes = 0, tokens = 0;
    HeadUsage usage(*model_);
    for (int64_t taken = 0;;) {
      ids_.clear();
      int64_t batch = 0;
      while (batch < eval_batch_ && (eval_windows_limit_ < 0 || (taken + batch) * world < eval_windows_limit_) &&
             windows.next(ids_))
        ++batch;
      if (batch == 0) break;
      taken += batch;
      auto [inputs, targets] = split_windows(ids_, batch);
      const Tensor logits = model_->forward(inputs.to(device_)).logits.data();
      const int64_t rows = batch * seq_len_;
      loss_sum += cross_entropy(logits.reshape({rows, options_.vocab_size}), targets.reshape({rows}).to(device_),
                                0.0, -100, Reduction::Sum)
                      .loss.item<double>();
      tokens += double(rows);
      bytes += double(text_bytes(targets));
      if (!head_usage_path_.empty()) usage.add_last_forward();
    }
    std::vector<double> sums{loss_sum, tokens, bytes};
    reduce_eval_sums(sums);
    if (!head_usage_path_.empty()) {
      reduce_eval_sums(usage.weighted_rates);
      if (dist::launch_env().rank == 0) write_file_atomically(head_usage_path_, usage.to_json(sums[1]) + "\n");
    }
    MOH_CHECK(sums[1] > 0, "llm eval: the validation split of '", val_.shards().front().path(),
              "' has no window of ", seq_len_ + 1, " tokens");
    const double loss = sums[0] / sums[1];
    return {{"loss", loss},
            {"perplexity", std::exp(loss)},
            {"bits_per_byte", sums[2] > 0 ? sums[0] / std::numbers::ln2 / sums[2] : 0.0},
            {"tokens", sums[1]},
            {"active_heads", options_.attention.active_share(options_.depth, options_.heads)}};
  }

  std::map<std::string, double> train_log_fields() const override {
    return {{"active_heads", options_.attention.active_share(options_.depth, options_.heads)},
            {"flops_per_token", flops_.active},
            {"flops_per_token_dense", flops_.dense}};
  }

  int64_t samples_per_epoch() const override { return std::max<int64_t>(1, train_.tokens() / seq_len_); }
  std::map<std::string, int64_t> data_state() const override { return windows_.state(); }
  void load_data_state(const std::map<std::string, int64_t>& state) override { windows_.load_state(state); }
  std::map<std::string, Generator*> generators() override { return {}; }

 private:
  // `count` windows of seq_len + 1 ids, window after window -> inputs and next-token targets [count, seq_len].
  std::pair<Tensor, Tensor> split_windows(const std::vector<text::TokenId>& ids, int64_t count) const {
    const int64_t n = seq_len_;
    for (text::TokenId id : ids)  // a shard made with another tokenizer would index past the embedding
      MOH_CHECK(id >= 0 && id < tokenizer_vocab_, "llm: the token shards in '", data_dir_, "' hold id ", id,
                " but data.tokenizer '", tokenizer_path_, "' has ", tokenizer_vocab_,
                " ids: were the shards made with another tokenizer?");
    std::vector<int64_t> inputs(size_t(count * n)), targets(size_t(count * n));
    for (int64_t w = 0; w < count; ++w)
      for (int64_t t = 0; t < n; ++t) {
        inputs[size_t(w * n + t)] = ids[size_t(w * (n + 1) + t)];
        targets[size_t(w * n + t)] = ids[size_t(w * (n + 1) + t + 1)];
      }
    return {from_vector(inputs, {count, n}), from_vector(targets, {count, n})};
  }

  // Bytes of the text the targets decode to, special tokens (document separators) not counted.
  int64_t text_bytes(const Tensor& targets) const {
    std::vector<text::TokenId> ordinary;
    for (int64_t id : targets.to_vector<int64_t>())
      if (!special_ids_.count(text::TokenId(id))) ordinary.push_back(text::TokenId(id));
    return int64_t(tokenizer_->decode(ordinary).size());
  }

  uint64_t seed_;
  std::string data_dir_, tokenizer_path_;
  std::unique_ptr<text::Tokenizer> tokenizer_;
  int64_t tokenizer_vocab_;
  std::set<text::TokenId> special_ids_;
  LlmOptions options_;
  int64_t seq_len_;
  text::TokenCorpus train_, val_;
  text::RandomTokenWindows windows_;
  int64_t eval_batch_;
  std::string head_usage_path_;  // eval.head_usage, "" when unset
  int64_t eval_windows_limit_;  // -1: every validation window
  Device device_;
  std::shared_ptr<LanguageModel> model_;
  LanguageModel::Flops flops_;
  std::vector<text::TokenId> ids_;
};

}  // namespace

LlmOptions llm_options_from_config(const Config& cfg, int64_t tokenizer_vocab) {
  LlmOptions o = llm_preset(cfg.get_string("model.preset"));
  if (cfg.has("model.arch")) o.arch = arch_of(cfg.get_string("model.arch"));
  o.vocab_size = tokenizer_vocab;
  if (cfg.has("model.vocab_size")) {
    o.vocab_size = cfg.get_int("model.vocab_size");
    if (o.vocab_size < tokenizer_vocab)
      throw ConfigError(str_cat(cfg.origin("model.vocab_size"), ": model.vocab_size ", o.vocab_size,
                                " is smaller than the tokenizer's ", tokenizer_vocab, " ids"));
  }
  if (cfg.has("model.dim")) o.dim = cfg.get_int("model.dim");
  if (cfg.has("model.depth")) o.depth = cfg.get_int("model.depth");
  if (cfg.has("model.heads")) o.heads = cfg.get_int("model.heads");
  if (cfg.has("model.kv_heads")) o.kv_heads = cfg.get_int("model.kv_heads");
  if (cfg.has("model.head_dim")) o.head_dim = cfg.get_int("model.head_dim");
  if (cfg.has("model.mlp_hidden")) o.mlp_hidden = cfg.get_int("model.mlp_hidden");
  if (cfg.has("model.max_seq_len")) o.max_seq_len = cfg.get_int("model.max_seq_len");
  if (cfg.has("model.rope_theta")) o.rope_theta = cfg.get_float("model.rope_theta");
  if (cfg.has("model.tie_embeddings")) {
    if (o.arch == LlmOptions::Arch::Gpt2 && !cfg.get_bool("model.tie_embeddings"))
      throw ConfigError(str_cat(cfg.origin("model.tie_embeddings"),
                                ": model.tie_embeddings: GPT-2-style models always tie their embeddings"));
    o.tie_embeddings = cfg.get_bool("model.tie_embeddings");
  }
  o.recompute = cfg.get_bool("model.recompute");
  if (o.head_dim == 0 && o.dim % o.heads != 0)
    throw ConfigError(str_cat(cfg.origin("model.heads"), ": model.heads ", o.heads, " does not divide model.dim ",
                              o.dim, " (or set model.head_dim)"));
  const int64_t kv = o.kv_heads == 0 ? o.heads : o.kv_heads;
  if (kv > o.heads || o.heads % kv != 0)
    throw ConfigError(str_cat(cfg.origin("model.kv_heads"), ": model.kv_heads ", kv,
                              " must divide model.heads ", o.heads));
  o.attention = attention_spec_from_config(cfg, o.depth, o.heads);
  return o;
}

TaskFamily llm_task_family() {
  return {"llm", "next-token language modelling (LLaMA- or GPT-2-style, MHA or MoH) on llm.c token shards",
          llm_schema, [](const Config& cfg) { return std::make_unique<LlmTask>(cfg); }};
}

}  // namespace moh
