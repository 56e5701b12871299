#include "core/rng.hpp"

#include <cstdio>
#include <sstream>

#include "core/error.hpp"

namespace gputrain {

std::string Rng::serialize() const {
    char buf[4 * 17 + 4];
    std::snprintf(buf, sizeof buf, "%016llx,%016llx,%016llx,%016llx",
                  static_cast<unsigned long long>(state_[0]), static_cast<unsigned long long>(state_[1]),
                  static_cast<unsigned long long>(state_[2]), static_cast<unsigned long long>(state_[3]));
    return buf;
}

void Rng::deserialize(const std::string& text) {
    std::array<uint64_t, 4> s{};
    std::istringstream in(text);
    std::string part;
    size_t i = 0;
    while (std::getline(in, part, ',')) {
        if (i >= 4 || part.size() != 16) throw DataError("malformed RNG state '" + text + "'");
        try {
            size_t used = 0;
            s[i++] = std::stoull(part, &used, 16);
            if (used != part.size()) throw DataError("malformed RNG state '" + text + "'");
        } catch (const std::logic_error&) {
            throw DataError("malformed RNG state '" + text + "'");
        }
    }
    if (i != 4) throw DataError("malformed RNG state '" + text + "'");
    state_ = s;
}

}  // namespace gputrain
