#include "device/visible_devices.hpp"

#include <cctype>
#include <set>
#include <string>
#include <vector>

namespace gputrain::device {
namespace {

std::vector<std::string> split_commas(const std::string& text) {
    std::vector<std::string> items;
    size_t start = 0;
    for (size_t comma; (comma = text.find(',', start)) != std::string::npos; start = comma + 1)
        items.push_back(text.substr(start, comma - start));
    items.push_back(text.substr(start));
    for (auto& item : items) {
        item.erase(0, item.find_first_not_of(" \t"));
        item.erase(item.find_last_not_of(" \t") + 1);
    }
    return items;
}

bool all_of(const std::string& s, size_t from, int (*pred)(int)) {
    if (s.size() <= from) return false;
    for (size_t i = from; i < s.size(); ++i)
        if (!pred(static_cast<unsigned char>(s[i]))) return false;
    return true;
}

int is_uuid_char(int c) { return std::isxdigit(c) || c == '-' || c == '/'; }

// An index (0, 1, ...) or a UUID or its prefix: GPU-8932f937..., MIG-<uuid>,
// or the older MIG-GPU-<uuid>/<instance>/<compute instance>.
bool is_gpu(const std::string& item) {
    if (all_of(item, 0, [](int c) { return std::isdigit(c); })) return true;
    for (const char* prefix : {"GPU-", "MIG-GPU-", "MIG-"}) {
        const size_t n = std::char_traits<char>::length(prefix);
        if (item.rfind(prefix, 0) == 0 && all_of(item, n, is_uuid_char)) return true;
    }
    return false;
}

}  // namespace

std::string visible_devices_problem(const std::string& value) {
    const std::string quoted = "CUDA_VISIBLE_DEVICES=\"" + value + "\"";
    if (value.find_first_not_of(" \t") == std::string::npos)
        return quoted + " hides every GPU; unset it (or list GPUs, e.g. 0,1) to use them";
    const std::vector<std::string> items = split_commas(value);
    std::set<std::string> seen;
    for (size_t i = 0; i < items.size(); ++i) {
        const std::string& item = items[i];
        const std::string after = i == 0 ? "every GPU" : "every GPU listed from there on";
        if (!is_gpu(item)) {
            if (item.size() > 1 && item[0] == '-' && all_of(item, 1, [](int c) { return std::isdigit(c); }))
                return quoted + ": '" + item + "' is not a GPU, so CUDA hides " + after +
                       "; unset it (or list GPUs, e.g. 0,1) to use them";
            return quoted + ": '" + item + "' is neither a GPU index nor a GPU UUID, so CUDA hides " + after +
                   "; list GPUs like 0,1 or GPU-<uuid> (see nvidia-smi -L), or unset it";
        }
        if (!seen.insert(item).second)
            return quoted + ": GPU " + item + " is listed twice, which CUDA does not accept; list each GPU once";
    }
    return "";
}

}  // namespace gputrain::device
