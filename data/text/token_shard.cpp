// llm.c token shards: writing and memory-mapped reading (see token_shard.h).
#include "data/text/token_shard.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "core/io/checked_write.h"

namespace moh::text {
namespace {

int32_t header_int(std::string_view bytes, size_t k) {
  int32_t v;
  std::memcpy(&v, bytes.data() + 4 * k, 4);  // little-endian hosts only (x86, ARM)
  return v;
}

const char* width_name(TokenWidth w) { return w == TokenWidth::U16 ? "uint16" : "uint32"; }

}  // namespace

TokenWidth token_width_for(int64_t vocab_size) {
  MOH_CHECK(vocab_size > 0 && vocab_size <= (int64_t(1) << 32), "vocabulary size ", vocab_size, " is out of range");
  return vocab_size <= 65536 ? TokenWidth::U16 : TokenWidth::U32;
}

void write_token_shard(const std::string& path, std::span<const TokenId> tokens, TokenWidth width) {
  const bool u16 = width == TokenWidth::U16;
  MOH_CHECK(tokens.size() <= size_t(INT32_MAX), "'", path, "': ", tokens.size(),
            " tokens do not fit one shard (the header counts them in an int32)");
  int32_t header[kShardHeaderInts] = {};
  header[0] = u16 ? kShardMagicU16 : kShardMagicU32;
  header[1] = u16 ? kShardVersionU16 : kShardVersionU32;
  header[2] = int32_t(tokens.size());
  std::string bytes(kShardHeaderBytes + tokens.size() * size_t(width), '\0');
  std::memcpy(bytes.data(), header, sizeof(header));
  char* payload = bytes.data() + kShardHeaderBytes;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const TokenId t = tokens[i];
    MOH_CHECK(t >= 0 && (!u16 || t <= 65535), "'", path, "': token ", i, " is ", t, ", which does not fit ",
              width_name(width));
    if (u16) {
      const uint16_t v = uint16_t(t);
      std::memcpy(payload + 2 * i, &v, 2);
    } else {
      const uint32_t v = uint32_t(t);
      std::memcpy(payload + 4 * i, &v, 4);
    }
  }
  write_file_atomically(path, bytes);
}

ShardView parse_token_shard(std::string_view bytes, const std::string& what) {
  MOH_CHECK(bytes.size() >= kShardHeaderBytes, "'", what, "' is truncated: ", bytes.size(),
            " bytes, but an llm.c token shard starts with a ", kShardHeaderBytes, "-byte header");
  const int32_t magic = header_int(bytes, 0), version = header_int(bytes, 1), count = header_int(bytes, 2);
  TokenWidth width;
  if (magic == kShardMagicU16) {
    width = TokenWidth::U16;
    MOH_CHECK(version == kShardVersionU16, "'", what, "': version ", version, ", but magic ", magic,
              " (uint16 tokens) goes with version ", kShardVersionU16);
  } else if (magic == kShardMagicU32) {
    width = TokenWidth::U32;
    MOH_CHECK(version == kShardVersionU32, "'", what, "': version ", version, ", but magic ", magic,
              " (uint32 tokens) goes with version ", kShardVersionU32);
  } else {
    MOH_FAIL("'", what, "' is not an llm.c token shard: magic ", magic, ", expected ", kShardMagicU16,
             " (uint16 tokens) or ", kShardMagicU32, " (uint32 tokens)");
  }
  MOH_CHECK(count >= 0, "'", what, "': negative token count ", count, " in the header");
  const uint64_t payload = bytes.size() - kShardHeaderBytes, expected = uint64_t(count) * uint64_t(width);
  if (payload != expected) {
    const TokenWidth other = width == TokenWidth::U16 ? TokenWidth::U32 : TokenWidth::U16;
    const bool other_width = payload == uint64_t(count) * uint64_t(other);
    MOH_FAIL("'", what, "': the header says ", count, " ", width_name(width), " tokens (", expected, " bytes) but ",
             payload, " bytes follow it",
             other_width ? str_cat(", which is the size of ", count, " ", width_name(other),
                                   " tokens: the tokens are of the wrong width for magic ", magic)
                         : payload < expected ? std::string(": the file is truncated")
                                              : std::string(": the count is wrong or data was appended"));
  }
  return {width, count, reinterpret_cast<const uint8_t*>(bytes.data() + kShardHeaderBytes)};
}

TokenShard::TokenShard(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  MOH_CHECK(fd >= 0, "cannot open token shard '", path, "': ", std::strerror(errno));
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    MOH_FAIL("'", path, "' is not a regular file");
  }
  map_bytes_ = size_t(st.st_size);
  if (map_bytes_ > 0) {
    map_ = ::mmap(nullptr, map_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map_ == MAP_FAILED) {
      map_ = nullptr;
      ::close(fd);
      MOH_FAIL("cannot memory-map '", path, "': ", std::strerror(errno));
    }
  }
  ::close(fd);
  try {
    view_ = parse_token_shard(std::string_view(static_cast<const char*>(map_), map_bytes_), path_);
  } catch (...) {
    if (map_) ::munmap(map_, map_bytes_);
    throw;
  }
}

TokenShard::TokenShard(TokenShard&& other) noexcept
    : path_(std::move(other.path_)), map_(other.map_), map_bytes_(other.map_bytes_), view_(other.view_) {
  other.map_ = nullptr;
  other.map_bytes_ = 0;
}

TokenShard::~TokenShard() {
  if (map_) ::munmap(map_, map_bytes_);
}

void TokenShard::copy(int64_t begin, int64_t count, std::vector<TokenId>& out) const {
  MOH_CHECK(begin >= 0 && count >= 0 && begin + count <= size(), "'", path_, "': tokens [", begin, ", ",
            begin + count, ") are outside its ", size(), " tokens");
  for (int64_t i = begin; i < begin + count; ++i) out.push_back((*this)[i]);
}

}  // namespace moh::text
