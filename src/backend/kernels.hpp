// Kernels outside the Backend interface: how an op is added without touching
// Backend or any backend class.
//
// An op is a struct of its arguments (pointers into backend memory, sizes;
// trivially copyable) with a static `kName`, declared under backend/ops/. A
// backend runs it by a function `void kernel(Backend&, const Op&)` in a kernel
// file of its own (backend/cpu/*_kernels.cpp, backend/cuda/*_kernels.cu),
// which adds it to the backend's KernelTable in its add_* function; the
// backend's kernel list (cpu_kernels.cpp, cuda_kernels.cpp) calls that once.
// run_op() (backend.hpp) finds the backend's kernel for the op and queues it:
// the CPU runs it at once, a GPU launches it on its stream (so a CUDA graph
// records it like any other launch), the sizing backend skips it, and the
// tests' recording backend records it.
#pragma once

#include <map>
#include <typeindex>
#include <typeinfo>

namespace gputrain {

class Backend;

class KernelTable {
public:
    using Fn = void (*)(Backend& backend, const void* op);

    template <typename Op, void (*Kernel)(Backend&, const Op&)>
    void add() {
        fns_[std::type_index(typeid(Op))] = &call<Op, Kernel>;
    }
    // The kernel for op type `op`; null when this backend has none.
    Fn find(const std::type_info& op) const {
        const auto it = fns_.find(std::type_index(op));
        return it == fns_.end() ? nullptr : it->second;
    }

private:
    template <typename Op, void (*Kernel)(Backend&, const Op&)>
    static void call(Backend& backend, const void* op) {
        Kernel(backend, *static_cast<const Op*>(op));
    }
    std::map<std::type_index, Fn> fns_;
};

}  // namespace gputrain
