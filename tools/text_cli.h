// The text commands of the `moh` command line (tools/cli.cpp dispatches here):
//   moh tokenize --tokenizer FILE --out DIR [--val-fraction F] [--threads N] [--shard-tokens N] FILES|DIRS|-
//   moh tokenizer encode|decode|info --tokenizer FILE [--whole] [--allow-special]
//   moh tokenizer train [--kind sentencepiece|char] [--vocab-size N] --out FILE [--threads N] FILES|DIRS
// Same exit-status contract as the rest of the CLI: 0 ok, 2 usage, 1 runtime failure.
#pragma once

#include <string>

namespace moh {

bool is_text_command(const std::string& command);
// argv[1] is the command.
int run_text_command(int argc, char** argv);

}  // namespace moh
