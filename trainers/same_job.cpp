// The ranks' start-up agreement on their job (see same_job.h).
#include "trainers/same_job.h"

#include <vector>

#include "core/factory.h"
#include "trainers/config_diff.h"
#include "trainers/trainer.h"

namespace moh {
namespace {

// FNV-1a over every shared key's resolved value.
int64_t job_digest(const Config& cfg) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const std::string& s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;  // separator
  };
  for (const config::Key& k : cfg.schema().keys()) {
    if (kPerRankKeys.count(k.path)) continue;
    mix(k.path);
    mix(cfg.has(k.path) ? config::format_value(cfg.get(k.path)) : "unset");
  }
  return int64_t(h);
}

// Every rank's dump() text, in rank order.
std::vector<std::string> gather_texts(dist::Communicator& host, const std::string& mine) {
  const std::vector<int64_t> lengths =
      dist::all_gather(host, from_vector(std::vector<int64_t>{int64_t(mine.size())}, {1}), "config length")
          .to_vector<int64_t>();
  int64_t longest = 0;
  for (int64_t n : lengths) longest = std::max(longest, n);
  Tensor padded = zeros({longest}, DType::UInt8);
  std::copy(mine.begin(), mine.end(), padded.data<uint8_t>());
  const Tensor all = dist::all_gather(host, padded, "config text");
  std::vector<std::string> texts;
  for (size_t r = 0; r < lengths.size(); ++r) {
    const char* begin = reinterpret_cast<const char*>(all.data<uint8_t>()) + int64_t(r) * longest;
    texts.emplace_back(begin, size_t(lengths[r]));
  }
  return texts;
}

Config parse_rank_config(const std::string& text, int rank) {
  const std::string family = Config::peek_string_text(text, "task", {}, str_cat("rank ", rank, "'s config"));
  return Config::parse(text, training_schema(family), str_cat("rank ", rank, "'s config"));
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) out += str_cat(i ? ", " : "", ranks[i]);
  return out + (ranks.size() == 1 ? " differs" : " differ");
}

}  // namespace

const std::set<std::string> kPerRankKeys = {"threads"};

void check_ranks_run_same_job(dist::Communicator& host, const Config& cfg, int64_t total_steps) {
  if (host.size() == 1) return;
  const std::vector<int64_t> all =
      dist::all_gather(host, from_vector(std::vector<int64_t>{job_digest(cfg), total_steps}, {2}), "job digest")
          .to_vector<int64_t>();
  std::vector<int> config_differs, steps_differ;
  for (int r = 1; r < host.size(); ++r) {
    if (all[2 * size_t(r)] != all[0]) config_differs.push_back(r);
    else if (all[2 * size_t(r) + 1] != all[1]) steps_differ.push_back(r);
  }
  if (config_differs.empty() && steps_differ.empty()) return;
  auto fail = [&](const std::string& what) {
    // Rank 0 alone gives the details, so the job's output holds the message once.
    throw ConfigError(host.rank() == 0 ? "the ranks do not run the same job: " + what
                                       : str_cat("rank ", host.rank(), " stops: the ranks do not run the same job ",
                                                 "(rank 0 reports how they differ)"));
  };
  const std::string advice = " (every rank must run the same config and overrides; only threads may differ)";
  if (config_differs.empty()) {
    const int r = steps_differ[0];
    fail(str_cat("rank 0 trains ", all[1], " steps but rank ", r, " trains ", all[2 * size_t(r) + 1],
                 " with the same config (", rank_list(steps_differ), " from rank 0: train.epochs over training ",
                 "sets of different sizes?)"));
  }
  // Every rank receives every config (rank 0 needs them; one collective serves all).
  const std::vector<std::string> texts = gather_texts(host, cfg.dump());
  const int r = config_differs[0];
  std::string first;
  try {
    const std::vector<ConfigDifference> diffs =
        config_differences(parse_rank_config(texts[0], 0), parse_rank_config(texts[size_t(r)], r), kPerRankKeys);
    if (!diffs.empty())
      first = str_cat(diffs[0].key, " is ", diffs[0].a, " on rank 0 but ", diffs[0].b, " on rank ", r,
                      diffs.size() > 1 ? str_cat(" (all differences of rank ", r, ": ", describe_differences(diffs), ")")
                                       : std::string());
  } catch (const ConfigError& e) {
    first = str_cat("rank ", r, "'s config cannot be read on this rank (", e.what(), ")");
  }
  if (first.empty()) first = str_cat("rank ", r, "'s config has another digest");
  fail(str_cat(first, "; ", rank_list(config_differs), " from rank 0", advice));
}

}  // namespace moh
