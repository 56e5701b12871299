#include <catch2/catch.hpp>

#include "device/pci_bus_id.hpp"

using namespace gputrain::device;

TEST_CASE("parse_pci_bus_id reads the CUDA, NVML and short forms alike") {
    const PciAddress expected{0, 0x3b, 0, 0};
    CHECK(parse_pci_bus_id("0000:3B:00.0") == expected);        // cuDeviceGetPCIBusId
    CHECK(parse_pci_bus_id("00000000:3b:00.0") == expected);    // nvmlPciInfo_t::busId
    CHECK(parse_pci_bus_id("3b:00.0") == expected);             // no domain
    CHECK(parse_pci_bus_id("0001:c1:1f.7") == PciAddress{1, 0xc1, 0x1f, 7});
}

TEST_CASE("parse_pci_bus_id rejects what is not a bus id") {
    for (const char* text : {"", "3b", "3b:00", "0000:3b:00", "0000:3b:00.8", "0000:3b:20.0", "0000:3bb:00.0",
                             "0:0000:3b:00.0", "0000:3g:00.0", "000000000:3b:00.0", "0000:3b:00.0 "})
        CHECK_FALSE(parse_pci_bus_id(text).has_value());
}

TEST_CASE("format_pci_bus_id writes lspci's form") {
    CHECK(format_pci_bus_id(PciAddress{0, 0x3b, 0, 0}) == "0000:3b:00.0");
    CHECK(format_pci_bus_id(PciAddress{0x10, 0xc1, 0x1f, 7}) == "0010:c1:1f.7");
}

TEST_CASE("match_pci_bus_ids follows the CUDA order, skipping GPUs it hides") {
    // As with CUDA_VISIBLE_DEVICES=2,0: CUDA shows NVML's third GPU first.
    const std::vector<std::string> nvml{"00000000:19:00.0", "00000000:2A:00.0", "00000000:3B:00.0"};
    const auto positions = match_pci_bus_ids({"0000:3b:00.0", "0000:19:00.0", "0000:5d:00.0", ""}, nvml);
    REQUIRE(positions.size() == 4);
    CHECK(positions[0] == 2u);
    CHECK(positions[1] == 0u);
    CHECK_FALSE(positions[2].has_value());   // not listed
    CHECK_FALSE(positions[3].has_value());   // the driver gave no bus id
}
