// Compile-time evidence for libstdcxx_concepts.hpp: with __cpp_concepts raised, clang must give
// libstdc++'s std::expected exactly the special members g++ 12 gives it (the values below are g++ 12's
// -std=c++23 answers). These traits are decided by P0848R3's constrained destructors and copy/move
// operations; a compiler that only pretended to implement it would fail here, not at run time.
#include <expected>
#include <string>
#include <type_traits>

namespace {

using Trivial = std::expected<int, int>;
using NonTrivialValue = std::expected<std::string, int>;
using NonTrivialError = std::expected<int, std::string>;
using VoidTrivial = std::expected<void, int>;
using VoidNonTrivial = std::expected<void, std::string>;

// Trivial members are chosen when both types have them ...
static_assert(std::is_trivially_destructible_v<Trivial>);
static_assert(std::is_trivially_copy_constructible_v<Trivial>);
static_assert(std::is_trivially_move_constructible_v<Trivial>);
static_assert(std::is_trivially_destructible_v<VoidTrivial>);
static_assert(std::is_trivially_copy_constructible_v<VoidTrivial>);
// ... (libstdc++ 12 has no trivial assignment for expected, with either compiler) ...
static_assert(!std::is_trivially_copy_assignable_v<Trivial>);
static_assert(!std::is_trivially_copyable_v<Trivial>);
// ... and the user-provided ones otherwise, which must still exist.
static_assert(!std::is_trivially_destructible_v<NonTrivialValue>);
static_assert(!std::is_trivially_destructible_v<NonTrivialError>);
static_assert(!std::is_trivially_destructible_v<VoidNonTrivial>);
static_assert(!std::is_trivially_copy_constructible_v<NonTrivialError>);
static_assert(std::is_copy_constructible_v<NonTrivialValue> && std::is_copy_assignable_v<NonTrivialValue>);
static_assert(std::is_nothrow_move_constructible_v<std::expected<std::string, std::string>>);
static_assert(std::is_copy_constructible_v<VoidNonTrivial> && std::is_move_assignable_v<VoidNonTrivial>);

}  // namespace
