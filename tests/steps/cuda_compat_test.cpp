#include "steps/cuda_compat.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuctk::steps {
namespace {

// --- compat_libraries, compat_library_version --------------------------------------------------------

TEST(CudaCompatLibraries, AreTheNamesMatchingLibcudaSoStarDotStar) {
  EXPECT_EQ(compat_libraries({"libcuda.so", "libcuda.so.1", "libcuda.so.575.57.08",
                              "libnvidia-ptxjitcompiler.so.575.57.08", "libcudadebugger.so.575.57.08"}),
            std::vector<std::string>{"libcuda.so.575.57.08"});
  // Jetson Orin's name, and names the pattern takes whatever their version says.
  for (const char* name : {"libcuda.so.1.1", "libcuda.so.535.104", "libcuda.so.550.x", "libcuda.so..",
                           "libcuda.so.550.54.15.bak", "libcuda.so.a.b"}) {
    EXPECT_EQ(compat_libraries({name}), std::vector<std::string>{name}) << name;
  }
  for (const char* name : {"libcuda.so", "libcuda.so.1", "libcuda.so.", "libcuda.so.550", "xlibcuda.so.1.1",
                           "LIBCUDA.SO.1.1", "libcuda.so1.1"}) {
    EXPECT_EQ(compat_libraries({name}), std::vector<std::string>{}) << name;
  }
  EXPECT_EQ(compat_libraries({"libcuda.so.550.54.15", "libcuda.so.1.1", "libcuda.so.545.23.08"}),
            (std::vector<std::string>{"libcuda.so.1.1", "libcuda.so.545.23.08", "libcuda.so.550.54.15"}));
}

TEST(CudaCompatLibraries, VersionIsWhatFollowsLibcudaSo) {
  EXPECT_EQ(compat_library_version("libcuda.so.575.57.08"), "575.57.08");
  EXPECT_EQ(compat_library_version("libcuda.so.1.1"), "1.1");
  EXPECT_EQ(compat_library_version("libnvidia-ml.so.575.57.08"), "");
}

// --- use_cuda_compat ---------------------------------------------------------------------------------

// The note of the 575.57.08 driver (tests/data/cuda_compat).
const std::optional<CudaCompatNote> k_note_575 =
    CudaCompatNote{1, "12.9", {535, 550, 560, 565, 570, 575}, {1, 2, 7, 8, 9, 10, 11, 12, 13, 14}};

CudaCompatHost driver(std::string version) {
  return {std::move(version), ""};
}
CudaCompatHost cuda(std::string version) {
  return {"", std::move(version)};
}

// NVIDIA's TestUseCompat (cudacompat/cuda-elf-header_test.go), case by case.
TEST(CudaCompatDecision, WithANoteAsNvidiaDecides) {
  // Only the host CUDA version known: the note's CUDA version must be newer.
  EXPECT_TRUE(use_cuda_compat("", k_note_575, cuda("12.8")));
  EXPECT_FALSE(use_cuda_compat("", k_note_575, cuda("12.9")));
  EXPECT_FALSE(use_cuda_compat("", k_note_575, cuda("12.10")));
  // Compat and host driver versions known: the host branch must be listed and the compat driver newer.
  EXPECT_FALSE(use_cuda_compat("575.57.08", k_note_575, driver("590.44.01")));  // 590 not listed
  EXPECT_TRUE(use_cuda_compat("575.57.08", k_note_575, driver("570.211.01")));
  EXPECT_TRUE(use_cuda_compat("575.57.08", k_note_575, driver("575.10.10")));
  EXPECT_FALSE(use_cuda_compat("575.57.08", k_note_575, driver("575.57.08")));
  EXPECT_FALSE(use_cuda_compat("575.57.08", k_note_575, driver("575.99.99")));
}

TEST(CudaCompatDecision, WithANoteTheDriversDecideWhenBothAreKnown) {
  // The host CUDA version plays no part then.
  EXPECT_FALSE(use_cuda_compat("575.57.08", k_note_575, {"590.44.01", "12.8"}));
  EXPECT_TRUE(use_cuda_compat("575.57.08", k_note_575, {"570.211.01", "13.0"}));
  // A note without a driver list (Jetson Orin's) never matches a host driver...
  const std::optional<CudaCompatNote> orin = CudaCompatNote{1, "13.2", {}, {}};
  EXPECT_FALSE(use_cuda_compat("1.1", orin, driver("540.4.0")));
  EXPECT_FALSE(use_cuda_compat("1.1", orin, {"540.4.0", "13.1"}));
  // ...and decides by its CUDA version when only the host's CUDA version is given.
  EXPECT_TRUE(use_cuda_compat("1.1", orin, cuda("13.1")));
  EXPECT_FALSE(use_cuda_compat("1.1", orin, cuda("13.2")));
}

TEST(CudaCompatDecision, WithANoteAnUnknownVersionFallsToTheCudaVersions) {
  // The compat version unknown ("550.x" matches libcuda.so.*.*): the CUDA versions decide, if given.
  EXPECT_TRUE(use_cuda_compat("550.x", k_note_575, {"570.211.01", "12.8"}));
  EXPECT_FALSE(use_cuda_compat("550.x", k_note_575, driver("570.211.01")));
  // The host driver version unknown.
  EXPECT_TRUE(use_cuda_compat("575.57.08", k_note_575, {"570.x", "12.8"}));
  EXPECT_FALSE(use_cuda_compat("575.57.08", k_note_575, {"570.x", "12.9"}));
  EXPECT_FALSE(use_cuda_compat("575.57.08", k_note_575, {"570.x", "twelve"}));
  // The note's CUDA version unknown or absent.
  const std::optional<CudaCompatNote> odd = CudaCompatNote{1, "twelve", {570}, {}};
  EXPECT_FALSE(use_cuda_compat("", odd, cuda("12.8")));
  EXPECT_FALSE(use_cuda_compat("", CudaCompatNote{}, cuda("12.8")));
  // Neither host version: nothing.
  EXPECT_FALSE(use_cuda_compat("575.57.08", k_note_575, {}));
}

// NVIDIA's TestCompatLibs (cudacompat_test.go): libraries without a note, by major versions.
TEST(CudaCompatDecision, WithoutANoteComparesMajors) {
  EXPECT_TRUE(use_cuda_compat("333.88.99", std::nullopt, driver("222.55.66")));
  EXPECT_FALSE(use_cuda_compat("111.88.99", std::nullopt, driver("222.55.66")));
  EXPECT_FALSE(use_cuda_compat("222.88.99", std::nullopt, driver("222.55.66")));  // same major
  EXPECT_TRUE(use_cuda_compat("222.88.99", std::nullopt, driver("99.55.66")));    // numeric, not textual
  EXPECT_FALSE(use_cuda_compat("222.88.99", std::nullopt, driver("")));
  EXPECT_FALSE(use_cuda_compat("550.x", std::nullopt, driver("222.55.66")));  // compat version unknown
  EXPECT_FALSE(use_cuda_compat("333.88.99", std::nullopt, driver("222.x")));
}

TEST(CudaCompatDecision, WithoutANoteTheHostCudaVersionMeansNo) {
  // Only a note says which CUDA the libraries bring: with the host's CUDA version given, no note is no.
  EXPECT_FALSE(use_cuda_compat("333.88.99", std::nullopt, {"222.55.66", "12.2"}));
  EXPECT_FALSE(use_cuda_compat("333.88.99", std::nullopt, {"222.55.66", "not a version"}));
  EXPECT_FALSE(use_cuda_compat("333.88.99", std::nullopt, cuda("12.2")));
}

// Versions as Masterminds' semver reads them (coercing), the library NVIDIA's hook uses.
TEST(CudaCompatDecision, ReadsVersionsAsSemverCoercingThem) {
  // "v", one to three numbers, leading zeros: 575.57.08 is 575.57.8, 12.9 is 12.9.0.
  EXPECT_FALSE(use_cuda_compat("575.57.08", k_note_575, driver("575.57.8")));
  EXPECT_TRUE(use_cuda_compat("575.57.08", k_note_575, driver("575.57.7")));
  EXPECT_TRUE(use_cuda_compat("v575.57.08", k_note_575, driver("v575")));
  EXPECT_FALSE(use_cuda_compat("", CudaCompatNote{1, "12.9.0", {}, {}}, cuda("12.9")));
  EXPECT_TRUE(use_cuda_compat("", CudaCompatNote{1, "13", {}, {}}, cuda("12.99.99")));
  // Not versions: four numbers, empty or non-digit parts, an upper-case V, overflow, over 256 bytes.
  for (const char* bad : {"575.57.08.1", "575..08", "575.", ".575", "575.x", "V575", "-575", " 575", "575 ",
                          "18446744073709551616", "1.2.3-", "1.2.3-a..b", "1.2.3+", "1.2.3-01", "1.2.3-é"}) {
    EXPECT_FALSE(use_cuda_compat(bad, std::nullopt, driver("1.0.0"))) << bad;
    EXPECT_FALSE(use_cuda_compat("999.0.0", std::nullopt, driver(bad))) << bad;
  }
  EXPECT_TRUE(use_cuda_compat("18446744073709551615.0", std::nullopt, driver("1")));
  EXPECT_TRUE(use_cuda_compat("999", std::nullopt, driver("1." + std::string(254, '0'))));  // 256 bytes
  EXPECT_FALSE(use_cuda_compat("999", std::nullopt, driver("1." + std::string(255, '0'))));
}

TEST(CudaCompatDecision, APrereleaseIsOlderAndMetadataDoesNotCount) {
  const auto newer = [](const char* note_cuda, const char* host_cuda) {
    return use_cuda_compat("", CudaCompatNote{1, note_cuda, {}, {}}, cuda(host_cuda));
  };
  // The order of semver.org's example, each newer than the one before.
  const std::vector<const char*> order{"1.0.0-alpha",  "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
                                       "1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1",       "1.0.0"};
  for (size_t i = 0; i + 1 < order.size(); ++i) {
    EXPECT_TRUE(newer(order[i + 1], order[i])) << order[i + 1] << " > " << order[i];
    EXPECT_FALSE(newer(order[i], order[i + 1])) << order[i] << " < " << order[i + 1];
  }
  EXPECT_FALSE(newer("13.0.0+build.7", "13.0.0"));
  EXPECT_FALSE(newer("13.0.0", "13.0.0+build.7"));
  EXPECT_TRUE(newer("13.0.1+build", "13.0.0-rc-1.x"));
  // A prerelease identifier too large for 64 bits sorts as a word.
  EXPECT_TRUE(newer("1.0.0-99999999999999999999", "1.0.0-5"));
}

TEST(CudaCompatDecision, HostMajorsCompareAsGoInts) {
  // NVIDIA converts the host major (a uint64) to Go's int: above 2^63 - 1 it wraps to a negative number.
  const std::optional<CudaCompatNote> wrapped = CudaCompatNote{1, "", {-9223372036854775807 - 1}, {}};
  EXPECT_TRUE(use_cuda_compat("18446744073709551615.0", wrapped, driver("9223372036854775808.0")));
  EXPECT_FALSE(use_cuda_compat("18446744073709551615.0", k_note_575, driver("9223372036854775808.0")));
}

}  // namespace
}  // namespace gpuctk::steps
