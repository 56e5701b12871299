#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

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

TEST_CASE("Keras' and PyTorch's names are answered with gputrain's, only where gputrain's is a candidate") {
    REQUIRE(did_you_mean("p", {"rate"}) == " (did you mean 'rate'?)");
    REQUIRE(did_you_mean("p", {"units"}).empty());
    REQUIRE(did_you_mean("MaxPool2d", {"max_pool2d", "dense"}) == " (did you mean 'max_pool2d'?)");
    REQUIRE(did_you_mean("MaxPooling2D", {"max_pool2d", "dense"}) == " (did you mean 'max_pool2d'?)");
    REQUIRE(did_you_mean("fashion_mnist", {"fashion-mnist", "mnist"}) == " (did you mean 'fashion-mnist'?)");
    REQUIRE(did_you_mean("in_features", {"units"}) ==
            " (gputrain infers a layer's input size from the layer before: remove it)");
    REQUIRE(closest_name("lr", {"learning_rate", "momentum"}) == "learning_rate");
}

TEST_CASE("docs/from-keras-and-pytorch.md lists every name of the alias table, as the table has it") {
    std::ifstream in(std::string(GPUTRAIN_SOURCE_ROOT) + "/docs/from-keras-and-pytorch.md");
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    const std::string doc = text.str();
    size_t rows = 0;
    for (const NameAlias& a : name_aliases()) {
        const std::string row = std::string("| `") + a.name + "` | " +
                                (*a.means ? std::string("`") + a.means + "`" : std::string("(none)")) + " | " + a.what +
                                " | " + a.note + " |";
        INFO(row);
        CHECK(doc.find(row) != std::string::npos);
        ++rows;
    }
    // And no row the table does not have.
    size_t doc_rows = 0;
    const size_t table = doc.find("| written | gputrain | what it is | note |");
    REQUIRE(table != std::string::npos);
    for (size_t at = doc.find("\n| `", table); at != std::string::npos; at = doc.find("\n| `", at + 1)) ++doc_rows;
    CHECK(doc_rows == rows);
}
