#include "core/suggest.hpp"

#include <algorithm>
#include <cctype>

namespace gputrain {

size_t edit_distance(const std::string& a, const std::string& b) {
    const size_t n = a.size(), m = b.size();
    std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
    for (size_t i = 0; i <= n; ++i) d[i][0] = i;
    for (size_t j = 0; j <= m; ++j) d[0][j] = j;
    for (size_t i = 1; i <= n; ++i) {
        for (size_t j = 1; j <= m; ++j) {
            const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                              std::tolower(static_cast<unsigned char>(b[j - 1]));
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (same ? 0 : 1)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    }
    return d[n][m];
}

std::string closest_name(const std::string& name, const std::vector<std::string>& candidates) {
    std::string best;
    size_t best_distance = std::max<size_t>(1, name.size() / 3) + 1;
    for (const auto& c : candidates) {
        const size_t dist = edit_distance(name, c);
        if (dist < best_distance) {
            best_distance = dist;
            best = c;
        }
    }
    return best;
}

std::string did_you_mean(const std::string& name, const std::vector<std::string>& candidates) {
    const std::string best = closest_name(name, candidates);
    return best.empty() ? std::string() : " (did you mean '" + best + "'?)";
}

std::string join_names(const std::vector<std::string>& names, const std::string& sep) {
    std::string out;
    for (size_t i = 0; i < names.size(); ++i) {
        if (i) out += sep;
        out += names[i];
    }
    return out;
}

}  // namespace gputrain
