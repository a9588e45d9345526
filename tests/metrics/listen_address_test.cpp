#include "metrics/listen_address.hpp"

#include <gtest/gtest.h>

namespace gpuctk::metrics {
namespace {

TEST(ListenAddress, ParsesHostPort) {
  EXPECT_EQ(parse_listen_address("127.0.0.1:9400").value(), (ListenAddress{"127.0.0.1", 9400}));
  EXPECT_EQ(parse_listen_address("localhost:0").value(), (ListenAddress{"localhost", 0}));
}

TEST(ListenAddress, EmptyHostIsEveryAddress) {
  EXPECT_EQ(parse_listen_address(":9400").value(), (ListenAddress{"", 9400}));
}

TEST(ListenAddress, BracketsHoldAnIpv6Address) {
  EXPECT_EQ(parse_listen_address("[::1]:9400").value(), (ListenAddress{"::1", 9400}));
  EXPECT_EQ(parse_listen_address("[::]:65535").value(), (ListenAddress{"::", 65535}));
}

TEST(ListenAddress, RefusesWhatIsNoAddress) {
  EXPECT_EQ(parse_listen_address("9400").error().message,
            "address \"9400\": want host:port, [v6]:port or :port");
  EXPECT_EQ(parse_listen_address("[::1]9400").error().message,
            "address \"[::1]9400\": want host:port, [v6]:port or :port");
  EXPECT_EQ(parse_listen_address("[::1:9400").error().message, "address \"[::1:9400\": unclosed \"[\"");
  EXPECT_EQ(parse_listen_address("::1:9400").error().message,
            "address \"::1:9400\": an IPv6 address needs brackets ([::1]:9400)");
}

TEST(ListenAddress, RefusesABadPort) {
  EXPECT_EQ(parse_listen_address(":http").error().message,
            "address \":http\": port \"http\" is not a number from 0 to 65535");
  EXPECT_EQ(parse_listen_address(":65536").error().message,
            "address \":65536\": port \"65536\" is not a number from 0 to 65535");
  EXPECT_EQ(parse_listen_address("host:").error().message,
            "address \"host:\": port \"\" is not a number from 0 to 65535");
  EXPECT_EQ(parse_listen_address(":-1").error().message,
            "address \":-1\": port \"-1\" is not a number from 0 to 65535");
}

TEST(ListenAddress, ListensOnAnyFreePortAndSaysWhich) {
  auto listener = listen_on({"127.0.0.1", 0});
  ASSERT_TRUE(listener) << listener.error().message;
  EXPECT_TRUE(listener->fd);
  ASSERT_TRUE(listener->shown.starts_with("127.0.0.1:")) << listener->shown;
  EXPECT_NE(listener->shown, "127.0.0.1:0");
}

TEST(ListenAddress, APortInUseIsAnError) {
  auto first = listen_on({"127.0.0.1", 0});
  ASSERT_TRUE(first) << first.error().message;
  const auto port = static_cast<uint16_t>(std::stoul(first->shown.substr(first->shown.rfind(':') + 1)));
  auto second = listen_on({"127.0.0.1", port});
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().message,
            "listen on 127.0.0.1:" + std::to_string(port) + ": bind: Address already in use");
}

TEST(ListenAddress, AnAddressNotOfThisMachineIsAnError) {
  auto listener = listen_on({"192.0.2.1", 9400});  // TEST-NET-1: never a local address
  ASSERT_FALSE(listener);
  EXPECT_EQ(listener.error().message, "listen on 192.0.2.1:9400: bind: Cannot assign requested address");
}

}  // namespace
}  // namespace gpuctk::metrics
