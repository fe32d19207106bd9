// Whole-file reads for the tokenizer formats: a file is read as it is, or inflated when it is
// gzip-compressed (detected by its magic bytes), so `cl100k_base.tiktoken.gz` loads like the plain file.
#pragma once

#include <string>

namespace moh::text {

// The file's bytes (decompressed when gzip). Errors name the file: missing, unreadable, corrupt gzip.
std::string read_file_bytes(const std::string& path);

}  // namespace moh::text
