// Fuzz target: llm.c-format token shards (data/text/token_shard.h), as the LLM trainer opens them: the
// header checks on bytes (parse_token_shard), then the memory-mapped TokenShard of the same file and
// a read of its first and last tokens.
#include <algorithm>
#include <vector>

#include "data/image_decode.h"  // read_file_bytes
#include "data/text/token_shard.h"
#include "fuzz/fuzz_target.h"

namespace {

void read(const uint8_t* data, size_t size) {
  using namespace moh::text;
  parse_token_shard(std::string_view(reinterpret_cast<const char*>(data), size), "input.bin");
  const TokenShard shard(moh::fuzz::scratch_file("input.bin", data, size));
  std::vector<TokenId> tokens;
  shard.copy(0, std::min<int64_t>(shard.size(), 64), tokens);
  if (shard.size() > 0) tokens.push_back(shard[shard.size() - 1]);
}

void seeds(const moh::fuzz::AddSeed& add) {
  using namespace moh::text;
  const std::string path = (moh::fuzz::scratch_dir() / "seed.bin").string();
  auto add_shard = [&](const std::string& name, const std::vector<TokenId>& tokens, TokenWidth width) {
    write_token_shard(path, tokens, width);
    add(name, moh::read_file_bytes(path));
  };
  add_shard("u16.bin", {50256, 464, 3290, 0, 65535}, TokenWidth::U16);
  add_shard("u32.bin", {128000, 791, 70000, 0, 128255}, TokenWidth::U32);
  add_shard("empty_u16.bin", {}, TokenWidth::U16);
}

}  // namespace

MOH_FUZZ_TARGET(read, seeds)
