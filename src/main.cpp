#include "backend/cpu/blas_core.hpp"
#include "cli/main_entry.hpp"

int main(int argc, char** argv) {
    gputrain::cpu::exec_with_better_blas_core(argv);  // OpenBLAS's kernels for an unknown CPU (blas_core.hpp)
    return gputrain::cli::main_entry(argc, argv);
}
