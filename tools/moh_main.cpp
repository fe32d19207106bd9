// Entry point of the `moh` executable (see tools/cli.h).
#include "tools/cli.h"

int main(int argc, char** argv) { return moh::run_cli(argc, argv); }
