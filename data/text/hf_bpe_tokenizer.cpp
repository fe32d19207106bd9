// Hugging Face tokenizer.json, byte-level BPE (see hf_bpe_tokenizer.h).
#include "data/text/hf_bpe_tokenizer.h"

#include <algorithm>
#include <queue>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "data/text/utf8.h"

namespace moh::text {
namespace {

using nlohmann::json;

// GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the other 68 bytes to
// U+0100.. in byte order. Returns the inverse: code point -> byte, -1 where none.
std::vector<int> unicode_to_byte() {
  std::vector<int> inverse(256 + 68, -1);
  int next = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    inverse[size_t(printable ? b : 256 + next++)] = b;
  }
  return inverse;
}

// The bytes a byte-level spelled string stands for; false when a character is not in the alphabet.
bool byte_level_to_bytes(const std::string& spelled, const std::vector<int>& inverse, std::string& bytes) {
  bytes.clear();
  for (size_t at = 0; at < spelled.size();) {
    const size_t length = utf8_sequence_length(spelled, at);
    if (length == 0 || length > 2) return false;
    const uint32_t cp = length == 1 ? uint8_t(spelled[at])
                                    : (uint32_t(uint8_t(spelled[at]) & 0x1F) << 6) | (uint8_t(spelled[at + 1]) & 0x3F);
    if (cp >= inverse.size() || inverse[cp] < 0) return false;
    bytes += char(inverse[cp]);
    at += length;
  }
  return !bytes.empty();
}

const json& member(const json& object, const char* key, const std::string& what) {
  MOH_CHECK(object.is_object() && object.contains(key), what, ": no '", key, "'");
  return object.at(key);
}

bool is_null_or(const json& object, const char* key, const json& allowed) {
  return !object.contains(key) || object.at(key).is_null() || object.at(key) == allowed;
}

// The split pattern the pre_tokenizer describes.
std::string split_pattern_of(const json& pre, const std::string& what) {
  const auto byte_level_ok = [&](const json& p, bool use_regex) {
    MOH_CHECK(is_null_or(p, "add_prefix_space", false), what, ": pre_tokenizer ByteLevel with add_prefix_space "
              "true is not supported");
    MOH_CHECK(p.value("use_regex", true) == use_regex, what, ": pre_tokenizer ByteLevel needs use_regex ",
              use_regex ? "true" : "false", " here");
  };
  MOH_CHECK(pre.is_object(), what, ": pre_tokenizer must be ByteLevel or Sequence[Split, ByteLevel]");
  const std::string type = pre.value("type", "");
  if (type == "ByteLevel") {
    byte_level_ok(pre, true);
    return kGpt2SplitPattern;
  }
  const json& seq = pre.value("pretokenizers", json::array());
  MOH_CHECK(type == "Sequence" && seq.size() == 2 && seq[0].value("type", "") == "Split" &&
                seq[1].value("type", "") == "ByteLevel",
            what, ": pre_tokenizer '", type, "' is not supported (expected ByteLevel or Sequence[Split, ByteLevel])");
  const json& split = seq[0];
  MOH_CHECK(split.value("behavior", "") == "Isolated" && !split.value("invert", false), what,
            ": pre_tokenizer Split must have behavior Isolated and invert false");
  const json& pattern = member(split, "pattern", what + " pre_tokenizer Split");
  MOH_CHECK(pattern.contains("Regex") && pattern.at("Regex").is_string(), what,
            ": pre_tokenizer Split needs a {\"Regex\": ...} pattern");
  byte_level_ok(seq[1], false);
  return pattern.at("Regex").get<std::string>();
}

}  // namespace

bool looks_like_hf_tokenizer(std::string_view text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && text[first] == '{' && text.find("\"model\"") != std::string_view::npos;
}

HfBpeTokenizer::HfBpeTokenizer(std::string_view json_text, const std::string& path) {
  what_ = str_cat("HF BPE tokenizer.json '", path, "'");
  json root;
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    MOH_FAIL("'", path, "' is not valid JSON: ", e.what());
  }
  try {
    MOH_CHECK(is_null_or(root, "normalizer", json()), what_, ": normalizers are not supported (normalizer must be null)");
    const json& model = member(root, "model", what_);
    MOH_CHECK(model.value("type", "BPE") == "BPE", what_, ": model type '", model.value("type", ""),
              "' is not supported (only BPE)");
    MOH_CHECK(is_null_or(model, "dropout", json()), what_, ": BPE dropout is not supported");
    MOH_CHECK(is_null_or(model, "byte_fallback", false), what_, ": byte_fallback is not supported (byte-level BPE only)");
    MOH_CHECK(is_null_or(model, "continuing_subword_prefix", "") && is_null_or(model, "end_of_word_suffix", ""), what_,
              ": continuing_subword_prefix / end_of_word_suffix are not supported");
    ignore_merges_ = model.value("ignore_merges", false);
    pattern_ = std::make_unique<SplitPattern>(split_pattern_of(member(root, "pre_tokenizer", what_), what_), what_);

    const std::vector<int> inverse = unicode_to_byte();
    const json& vocab = member(model, "vocab", what_ + " model");
    MOH_CHECK(vocab.is_object() && !vocab.empty(), what_, ": model.vocab must be a non-empty object");
    std::string bytes;
    for (const auto& [spelled, id_json] : vocab.items()) {
      MOH_CHECK(id_json.is_number_integer(), what_, ": vocab id of '", spelled, "' is not an integer");
      const int64_t id = id_json.get<int64_t>();
      MOH_CHECK(id >= 0 && id < (int64_t(1) << 31) - 1, what_, ": vocab id ", id, " of '", spelled, "' is out of range");
      MOH_CHECK(byte_level_to_bytes(spelled, inverse, bytes), what_, ": vocab token '", spelled,
                "' is not byte-level spelled (GPT-2's byte alphabet)");
      if (size_t(id) >= bytes_by_id_.size()) {
        bytes_by_id_.resize(size_t(id) + 1);
        has_id_.resize(size_t(id) + 1);
      }
      MOH_CHECK(!has_id_[size_t(id)], what_, ": vocab id ", id, " is used twice");
      MOH_CHECK(id_by_bytes_.emplace(bytes, TokenId(id)).second, what_, ": vocab token '", spelled, "' appears twice");
      bytes_by_id_[size_t(id)] = bytes;
      has_id_[size_t(id)] = true;
    }
    for (int b = 0; b < 256; ++b) {
      const auto it = id_by_bytes_.find(std::string(1, char(b)));
      MOH_CHECK(it != id_by_bytes_.end(), what_, ": byte ", b, " has no token (a byte-level BPE needs all 256)");
      byte_ids_[b] = it->second;
    }

    const json& merges = member(model, "merges", what_ + " model");
    MOH_CHECK(merges.is_array(), what_, ": model.merges must be an array");
    merges_.reserve(merges.size());
    std::string left_bytes, right_bytes;
    for (size_t rank = 0; rank < merges.size(); ++rank) {
      const json& m = merges[rank];
      std::string left, right;
      if (m.is_string()) {
        const std::string s = m.get<std::string>();
        const size_t space = s.find(' ');
        MOH_CHECK(space != std::string::npos && s.find(' ', space + 1) == std::string::npos, what_, ": merge ", rank,
                  " ('", s, "') is not 'left right'");
        left = s.substr(0, space);
        right = s.substr(space + 1);
      } else {
        MOH_CHECK(m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string(), what_, ": merge ", rank,
                  " is neither 'left right' nor [left, right]");
        left = m[0].get<std::string>();
        right = m[1].get<std::string>();
      }
      const auto l = vocab.find(left), r = vocab.find(right), merged = vocab.find(left + right);
      MOH_CHECK(l != vocab.end() && r != vocab.end() && merged != vocab.end(), what_, ": merge ", rank, " ('", left, "', '",
                right, "') uses or makes a token that is not in the vocabulary");
      const uint64_t key = (uint64_t(l->get<uint32_t>()) << 32) | r->get<uint32_t>();
      merges_.emplace(key, Merge{int32_t(rank), merged->get<TokenId>()});  // the first listing wins, as in HF
    }
    vocab_size_ = TokenId(bytes_by_id_.size());
    for (const json& added : root.value("added_tokens", json::array())) {
      const std::string content = member(added, "content", what_ + " added_tokens").get<std::string>();
      const TokenId id = member(added, "id", what_ + " added_tokens").get<TokenId>();
      MOH_CHECK(!content.empty() && id >= 0, what_, ": added token '", content, "' with id ", id, " is invalid");
      MOH_CHECK(special_tokens_.emplace(content, id).second, what_, ": added token '", content, "' appears twice");
      vocab_size_ = std::max(vocab_size_, id + 1);
    }
  } catch (const json::exception& e) {
    MOH_FAIL(what_, ": unexpected JSON structure: ", e.what());
  }
}

const HfBpeTokenizer::Merge* HfBpeTokenizer::find_merge(TokenId left, TokenId right) const {
  const auto it = merges_.find((uint64_t(uint32_t(left)) << 32) | uint32_t(right));
  return it == merges_.end() ? nullptr : &it->second;
}

void HfBpeTokenizer::encode_ordinary_into(std::string_view text, std::vector<TokenId>& out) const {
  std::vector<Piece> pieces;
  pieces.reserve(text.size() / 4 + 1);
  pattern_->split(text, pieces);
  for (const Piece& p : pieces) encode_piece(text.substr(p.begin, p.end - p.begin), out);
}

void HfBpeTokenizer::encode_piece(std::string_view piece, std::vector<TokenId>& out) const {
  if (ignore_merges_) {
    const auto whole = id_by_bytes_.find(std::string(piece));
    if (whole != id_by_bytes_.end()) {
      out.push_back(whole->second);
      return;
    }
  }
  const uint32_t n = uint32_t(piece.size());
  std::vector<TokenId> symbol(n);
  std::vector<uint32_t> next(n), prev(n);
  std::vector<bool> alive(n, true);
  for (uint32_t k = 0; k < n; ++k) {
    symbol[k] = byte_ids_[uint8_t(piece[k])];
    next[k] = k + 1;
    prev[k] = k == 0 ? n : k - 1;
  }
  struct Candidate {
    int32_t rank;
    uint32_t at;
    TokenId left, right;  // the symbols the merge was found for (stale when they changed)
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : at > o.at; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> heap;
  const auto consider = [&](uint32_t k) {
    if (k >= n || next[k] >= n) return;
    if (const Merge* m = find_merge(symbol[k], symbol[next[k]])) heap.push({m->rank, k, symbol[k], symbol[next[k]]});
  };
  for (uint32_t k = 0; k + 1 < n; ++k) consider(k);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    if (!alive[c.at] || next[c.at] >= n || symbol[c.at] != c.left || symbol[next[c.at]] != c.right) continue;
    const uint32_t gone = next[c.at];
    symbol[c.at] = find_merge(c.left, c.right)->merged;
    alive[gone] = false;
    next[c.at] = next[gone];
    if (next[c.at] < n) prev[next[c.at]] = c.at;
    consider(c.at);
    if (prev[c.at] < n) consider(prev[c.at]);
  }
  for (uint32_t k = 0; k < n; k = next[k]) out.push_back(symbol[k]);
}

std::string HfBpeTokenizer::decode(std::span<const TokenId> ids) const {
  std::string out;
  for (const TokenId id : ids) {
    if (id >= 0 && size_t(id) < has_id_.size() && has_id_[size_t(id)]) {
      out += bytes_by_id_[size_t(id)];
      continue;
    }
    const auto special = std::find_if(special_tokens_.begin(), special_tokens_.end(),
                                      [&](const auto& entry) { return entry.second == id; });
    MOH_CHECK(special != special_tokens_.end(), what_, ": cannot decode id ", id, " (not a token of this vocabulary of ",
              vocab_size_, ")");
    out += special->first;
  }
  return out;
}

}  // namespace moh::text
