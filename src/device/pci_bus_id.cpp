#include "device/pci_bus_id.hpp"

#include <cstdio>
#include <vector>

namespace gputrain::device {

namespace {

// One hex field of at most max_digits digits, none left over.
std::optional<unsigned> parse_hex(std::string_view text, size_t max_digits) {
    if (text.empty() || text.size() > max_digits) return std::nullopt;
    unsigned value = 0;
    for (char c : text) {
        unsigned digit = 0;
        if (c >= '0' && c <= '9') digit = static_cast<unsigned>(c - '0');
        else if (c >= 'a' && c <= 'f') digit = static_cast<unsigned>(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') digit = static_cast<unsigned>(c - 'A' + 10);
        else return std::nullopt;
        value = value * 16 + digit;
    }
    return value;
}

std::vector<std::string_view> split(std::string_view text, char sep) {
    std::vector<std::string_view> parts;
    size_t start = 0;
    for (size_t pos; (pos = text.find(sep, start)) != std::string_view::npos; start = pos + 1)
        parts.push_back(text.substr(start, pos - start));
    parts.push_back(text.substr(start));
    return parts;
}

}  // namespace

std::optional<PciAddress> parse_pci_bus_id(std::string_view text) {
    const auto dot = text.rfind('.');
    if (dot == std::string_view::npos) return std::nullopt;
    const auto fields = split(text.substr(0, dot), ':');
    if (fields.size() != 2 && fields.size() != 3) return std::nullopt;
    const bool has_domain = fields.size() == 3;
    const auto domain = has_domain ? parse_hex(fields[0], 8) : std::optional<unsigned>(0);
    const auto bus = parse_hex(fields[has_domain ? 1 : 0], 2);
    const auto device = parse_hex(fields[has_domain ? 2 : 1], 2);
    const auto function = parse_hex(text.substr(dot + 1), 1);
    if (!domain || !bus || !device || !function || *device > 0x1f || *function > 7) return std::nullopt;
    return PciAddress{*domain, *bus, *device, *function};
}

std::string format_pci_bus_id(const PciAddress& a) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", a.domain, a.bus, a.device, a.function);
    return buf;
}

std::vector<std::optional<size_t>> match_pci_bus_ids(const std::vector<std::string>& wanted,
                                                     const std::vector<std::string>& listed) {
    std::vector<std::optional<PciAddress>> listed_addresses;
    for (const auto& id : listed) listed_addresses.push_back(parse_pci_bus_id(id));
    std::vector<std::optional<size_t>> positions;
    for (const auto& id : wanted) {
        std::optional<size_t> position;
        if (const auto address = parse_pci_bus_id(id))
            for (size_t k = 0; k < listed_addresses.size() && !position; ++k)
                if (listed_addresses[k] == address) position = k;
        positions.push_back(position);
    }
    return positions;
}

}  // namespace gputrain::device
