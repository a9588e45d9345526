// The API server's errors and watch stream as the client decodes them: Status messages, escaping, bounds.
#include "kube/wire.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuctk::kube {
namespace {

TEST(ApiError, TheStatusMessageAfterTheHttpStatus) {
  const ApiError e = api_error("GET /api/v1/nodes/n1", 404,
                               R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)"
                               R"("message":"nodes \"n1\" not found","reason":"NotFound","code":404})");
  EXPECT_EQ(e.status, 404);
  EXPECT_EQ(e.message, "GET /api/v1/nodes/n1: 404 Not Found: nodes \"n1\" not found");
}

TEST(ApiError, AnAnswerThatIsNoStatusIsQuotedEscapedAndBounded) {
  EXPECT_EQ(api_error("GET /x", 502, "bad gateway\x1b[31m\n").message, "GET /x: 502: bad gateway\\x1b[31m");
  EXPECT_EQ(api_error("GET /x", 500, "").message, "GET /x: 500 Internal Server Error");
  const ApiError long_one = api_error("GET /x", 503, std::string(5000, 'a'));
  EXPECT_EQ(long_one.message,
            "GET /x: 503 Service Unavailable: " + std::string(1024, 'a') + "…(3976 bytes cut)");
  // A Status whose message would forge a log line.
  EXPECT_EQ(api_error("GET /x", 401, R"({"kind":"Status","message":"Unauthorized\nE0101 fake"})").message,
            "GET /x: 401 Unauthorized: Unauthorized\\nE0101 fake");
}

TEST(ApiError, FromAWatchsErrorEvent) {
  const auto status = nlohmann::json::parse(
      R"j({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",)j"
      R"j("message":"too old resource version: 5 (7)","reason":"Expired","code":410})j");
  const ApiError e = status_error("watch /api/v1/nodes", status);
  EXPECT_EQ(e.status, 410);
  EXPECT_EQ(e.message, "watch /api/v1/nodes: 410 Gone: too old resource version: 5 (7)");
  EXPECT_EQ(status_error("w", nlohmann::json::object()).message, "w: 500 Internal Server Error");
}

struct Collected {
  std::vector<std::string> types;
  std::vector<std::string> names;
  std::function<bool(const WatchEvent&)> sink(size_t stop_after = SIZE_MAX) {
    return [this, stop_after](const WatchEvent& event) {
      types.push_back(event.type);
      names.push_back(event.object.value("name", ""));
      return types.size() < stop_after;
    };
  }
};

TEST(WatchDecoder, EventsSplitAnywhereAcrossReads) {
  const std::string stream =
      "{\"type\":\"ADDED\",\"object\":{\"name\":\"a\"}}\n\n{\"type\":\"MODIFIED\",\"object\":{\"name\":\"b\"}"
      "}\n"
      "{\"type\":\"BOOKMARK\",\"object\":{}}\n";
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    WatchDecoder decoder;
    Collected got;
    ASSERT_TRUE(decoder.feed(stream.substr(0, cut), got.sink()).value());
    ASSERT_TRUE(decoder.feed(stream.substr(cut), got.sink()).value());
    EXPECT_EQ(got.types, (std::vector<std::string>{"ADDED", "MODIFIED", "BOOKMARK"})) << cut;
    EXPECT_EQ(got.names, (std::vector<std::string>{"a", "b", ""})) << cut;
    EXPECT_FALSE(decoder.pending());
  }
}

TEST(WatchDecoder, StopsWhenTheCallerSaysSo) {
  WatchDecoder decoder;
  Collected got;
  const auto more = decoder.feed(
      "{\"type\":\"ADDED\",\"object\":{}}\n{\"type\":\"DELETED\",\"object\":{}}\n{\"type\":\"ADDED\","
      "\"object\":{}}\n",
      got.sink(2));
  ASSERT_TRUE(more);
  EXPECT_FALSE(*more);
  EXPECT_EQ(got.types, (std::vector<std::string>{"ADDED", "DELETED"}));
}

TEST(WatchDecoder, BoundedAndStrict) {
  Collected got;
  WatchDecoder small(64);
  EXPECT_TRUE(small.feed(std::string(40, ' '), got.sink()).value());
  EXPECT_TRUE(small.pending());
  EXPECT_EQ(small.feed(std::string(30, ' '), got.sink()).error().message, "watch event larger than 64 bytes");
  EXPECT_EQ(WatchDecoder().feed("{nope\n", got.sink()).error().message, "watch event is not JSON: {nope");
  EXPECT_EQ(WatchDecoder().feed("{\"type\":\"ADDED\"}\n", got.sink()).error().message,
            "watch event without a type and an object: {\"type\":\"ADDED\"}");
  EXPECT_EQ(WatchDecoder().feed("[1]\n", got.sink()).error().message,
            "watch event without a type and an object: [1]");
  EXPECT_TRUE(got.types.empty());
}

}  // namespace
}  // namespace gpuctk::kube
