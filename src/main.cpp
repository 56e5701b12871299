#include "cli/main_entry.hpp"
int main(int argc, char** argv) { return gputrain::cli::main_entry(argc, argv); }
