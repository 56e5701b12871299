// The token ids of format: text, which its data sets are windows of.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace gputrain::data {

// The token ids of a text: held in memory (as tokenizing makes them), or a
// view of a memory-mapped token cache (data/token_cache.hpp) of uint16 or
// uint32 ids, read widened to uint32; `owner` keeps the mapping alive.
class TokenIds {
public:
    TokenIds() = default;
    TokenIds(std::vector<uint32_t> ids) : held_(std::move(ids)) {}  // NOLINT: implicit, as a vector was
    TokenIds(std::shared_ptr<const void> owner, std::span<const uint16_t> ids)
        : owner_(std::move(owner)), ids16_(ids), width_(2) {}
    TokenIds(std::shared_ptr<const void> owner, std::span<const uint32_t> ids)
        : owner_(std::move(owner)), ids32_(ids), width_(4) {}

    size_t size() const { return owner_ ? (width_ == 2 ? ids16_.size() : ids32_.size()) : held_.size(); }
    bool empty() const { return size() == 0; }
    uint32_t operator[](size_t i) const { return owner_ ? (width_ == 2 ? ids16_[i] : ids32_[i]) : held_[i]; }
    bool mapped() const { return owner_ != nullptr; }
    // The file a view maps (the token cache), for messages; empty when held.
    const std::string& mapped_file() const { return mapped_file_; }
    void set_mapped_file(std::string path) { mapped_file_ = std::move(path); }
    int width() const { return width_; }  // bytes per id where they are: 2 or 4
    // The ids as stored: size() values of width() bytes.
    const void* data() const {
        if (!owner_) return held_.data();
        return width_ == 2 ? static_cast<const void*>(ids16_.data()) : static_cast<const void*>(ids32_.data());
    }
    // f(std::span<const uint16_t>) or f(std::span<const uint32_t>): every id, as stored.
    template <class F>
    decltype(auto) visit(F&& f) const {
        if (owner_ && width_ == 2) return f(ids16_);
        return f(owner_ ? ids32_ : std::span<const uint32_t>(held_));
    }
    // Held ids only grow: a view is copied into memory first.
    void push_back(uint32_t id) { hold().push_back(id); }
    void append(const std::vector<uint32_t>& ids) {
        std::vector<uint32_t>& held = hold();
        held.insert(held.end(), ids.begin(), ids.end());
    }
    void reserve(size_t n) { hold().reserve(n); }
    std::vector<uint32_t> to_vector() const {
        return visit([](auto ids) { return std::vector<uint32_t>(ids.begin(), ids.end()); });
    }
    bool operator==(const std::vector<uint32_t>& other) const { return to_vector() == other; }

private:
    std::vector<uint32_t>& hold() {
        if (owner_) {
            held_ = to_vector();
            owner_.reset();
            mapped_file_.clear();
            width_ = 4;
        }
        return held_;
    }
    std::vector<uint32_t> held_;
    std::shared_ptr<const void> owner_;  // the mapping of a view
    std::string mapped_file_;
    std::span<const uint16_t> ids16_;
    std::span<const uint32_t> ids32_;
    int width_ = 4;
};

}  // namespace gputrain::data
