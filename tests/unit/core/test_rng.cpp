#include <catch2/catch.hpp>

#include <set>

#include "core/error.hpp"
#include "core/rng.hpp"

using gputrain::Rng;

TEST_CASE("Rng is reproducible from a seed and differs between seeds") {
    Rng a(7), b(7), c(8);
    for (int i = 0; i < 100; ++i) {
        const uint64_t x = a.next_u64();
        REQUIRE(x == b.next_u64());
        REQUIRE(x != c.next_u64());
    }
}

TEST_CASE("Rng state round-trips through its text form") {
    Rng a(123);
    a.next_u64();
    Rng b(0);
    b.deserialize(a.serialize());
    for (int i = 0; i < 10; ++i) REQUIRE(a.next_u64() == b.next_u64());
    REQUIRE_THROWS_AS(b.deserialize("12,34"), gputrain::DataError);
    REQUIRE_THROWS_AS(b.deserialize("zzzzzzzzzzzzzzzz,0000000000000000,0000000000000000,0000000000000000"),
                      gputrain::DataError);
}

TEST_CASE("Rng uniform lies in [0,1) with mean near 1/2; below(n) covers [0,n)") {
    Rng r(1);
    double sum = 0;
    for (int i = 0; i < 100000; ++i) {
        const float u = r.uniform();
        REQUIRE(u >= 0.0f);
        REQUIRE(u < 1.0f);
        sum += u;
    }
    REQUIRE(sum / 100000 == Approx(0.5).margin(0.01));
    std::set<uint64_t> seen;
    for (int i = 0; i < 1000; ++i) {
        const uint64_t k = r.below(7);
        REQUIRE(k < 7);
        seen.insert(k);
    }
    REQUIRE(seen.size() == 7);
}
