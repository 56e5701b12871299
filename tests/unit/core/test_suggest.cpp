#include <catch2/catch.hpp>

#include "core/suggest.hpp"

using namespace gputrain;

TEST_CASE("edit_distance counts edits, transpositions as one") {
    REQUIRE(edit_distance("dense", "dense") == 0);
    REQUIRE(edit_distance("dense", "dnese") == 1);
    REQUIRE(edit_distance("epochs", "epoch") == 1);
    REQUIRE(edit_distance("", "abc") == 3);
}

TEST_CASE("did_you_mean suggests only near misses") {
    const std::vector<std::string> known{"epochs", "batch_size", "shuffle", "seed"};
    REQUIRE(did_you_mean("epoch", known) == " (did you mean 'epochs'?)");
    REQUIRE(did_you_mean("batchsize", known) == " (did you mean 'batch_size'?)");
    REQUIRE(did_you_mean("learning_rate", known).empty());
    REQUIRE(join_names({"a", "b"}) == "a, b");
}
