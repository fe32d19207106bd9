// Token shards in llm.c's format, so shards move between moh and llm.c: a header of 256 little-endian
// int32 (header[0] magic, header[1] version, header[2] token count, the rest 0), then the tokens:
//   magic 20240520, version 1: uint16 tokens (GPT-2-sized vocabularies)
//   magic 20240801, version 7: uint32 tokens (LLaMA-3-sized vocabularies)
// The file is exactly 1024 + count * width bytes. TokenShard memory-maps one read-only; every way a
// file can fail to be a shard (truncated, foreign magic, unknown version, count and size disagreeing,
// tokens of the other width) is an Error naming the file and what is wrong.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "data/text/byte_pair_encoder.h"

namespace moh::text {

enum class TokenWidth { U16 = 2, U32 = 4 };

constexpr int32_t kShardMagicU16 = 20240520, kShardVersionU16 = 1;
constexpr int32_t kShardMagicU32 = 20240801, kShardVersionU32 = 7;
constexpr size_t kShardHeaderInts = 256, kShardHeaderBytes = kShardHeaderInts * 4;

// The narrowest width that holds ids below `vocab_size`.
TokenWidth token_width_for(int64_t vocab_size);

// Writes a shard atomically (core/io/checked_write.h). Every token must fit the width.
void write_token_shard(const std::string& path, std::span<const TokenId> tokens, TokenWidth width);

// The header and payload of a shard held in memory (`what` names it in errors): the checks
// TokenShard applies to a file, usable on bytes.
struct ShardView {
  TokenWidth width;
  int64_t count;
  const uint8_t* tokens;
};
ShardView parse_token_shard(std::string_view bytes, const std::string& what);

class TokenShard {
 public:
  explicit TokenShard(const std::string& path);
  ~TokenShard();
  TokenShard(TokenShard&& other) noexcept;
  TokenShard& operator=(TokenShard&&) = delete;
  TokenShard(const TokenShard&) = delete;

  int64_t size() const { return view_.count; }
  TokenWidth width() const { return view_.width; }
  const std::string& path() const { return path_; }
  TokenId operator[](int64_t i) const {
    return view_.width == TokenWidth::U16 ? TokenId(reinterpret_cast<const uint16_t*>(view_.tokens)[i])
                                          : TokenId(reinterpret_cast<const uint32_t*>(view_.tokens)[i]);
  }
  // Tokens [begin, begin + count) appended to `out`; the range must lie inside the shard.
  void copy(int64_t begin, int64_t count, std::vector<TokenId>& out) const;

 private:
  std::string path_;
  void* map_ = nullptr;
  size_t map_bytes_ = 0;
  ShardView view_{};
};

}  // namespace moh::text
