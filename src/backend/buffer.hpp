// Owning blocks of a backend's memory: a Buffer (device memory, or plain
// memory on the CPU) and a PinnedBuffer (page-locked host memory) free
// themselves when they go out of scope, so an object that holds them frees
// everything it allocated, also when its constructor throws halfway.
#pragma once

#include <cstddef>
#include <utility>

#include "backend/backend.hpp"

namespace gputrain {

template <void* (Backend::*Allocate)(size_t), void (Backend::*Release)(void*)>
class OwnedBlock {
public:
    OwnedBlock() = default;
    OwnedBlock(Backend& backend, size_t bytes) : backend_(&backend), data_((backend.*Allocate)(bytes)), bytes_(bytes) {}
    ~OwnedBlock() { reset(); }
    OwnedBlock(OwnedBlock&& other) noexcept
        : backend_(other.backend_), data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
    OwnedBlock& operator=(OwnedBlock&& other) noexcept {
        if (this != &other) {
            reset();
            backend_ = other.backend_;
            data_ = std::exchange(other.data_, nullptr);
            bytes_ = std::exchange(other.bytes_, 0);
        }
        return *this;
    }
    OwnedBlock(const OwnedBlock&) = delete;
    OwnedBlock& operator=(const OwnedBlock&) = delete;

    void* get() const { return data_; }
    float* floats() const { return static_cast<float*>(data_); }
    template <class T>
    T* as() const {
        return static_cast<T*>(data_);
    }
    size_t bytes() const { return bytes_; }
    explicit operator bool() const { return data_ != nullptr; }
    void reset() {
        if (data_) (backend_->*Release)(std::exchange(data_, nullptr));
        bytes_ = 0;
    }

private:
    Backend* backend_ = nullptr;
    void* data_ = nullptr;
    size_t bytes_ = 0;
};

using Buffer = OwnedBlock<&Backend::allocate_bytes, &Backend::release>;
using PinnedBuffer = OwnedBlock<&Backend::allocate_host_pinned, &Backend::release_host_pinned>;

// `count` floats of backend memory.
inline Buffer float_buffer(Backend& backend, size_t count) { return Buffer(backend, count * sizeof(float)); }

}  // namespace gputrain
