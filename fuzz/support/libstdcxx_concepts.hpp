// Force-included (-include) into every C++ file of the fuzz build, before any other header; only when
// the compiler lacks <expected> (fuzz/CMakeLists.txt checks). Not part of gpuctk.
//
// libstdc++ 12 declares std::expected only when __cpp_concepts >= 202002L (and picks its C++20,
// union-based std::variant the same way). That value means P0848R3, "conditionally trivial special
// member functions": class templates whose destructor and copy/move operations are overloaded on
// requires-clauses, which is how libstdc++ writes expected. Clang implements P0848R3 since clang 16
// but kept reporting 201907L until clang 19 (llvm/llvm-project#57524, PR #87998, whose stated reason
// for raising it is exactly this libstdc++ header) because of unrelated concepts defects. So for clang
// 16 to 18 with libstdc++ the macro under-reports what the compiler does; raising it lets clang see
// the same libstdc++ configuration g++ -std=c++23 sees in the main build, nothing more.
//
// libstdcxx_concepts_check.cpp proves, at compile time, that clang then gives std::expected the same
// special members and triviality as g++ 12 (the part of the language this depends on); the whole
// gpuctk library, which uses Result<T> = std::expected everywhere, also compiles and runs under ASan +
// UBSan here. Clang >= 19 or libc++ never take this path.
#pragma once

#if defined(__clang__) && __clang_major__ >= 16 && __clang_major__ < 19 && __cplusplus > 202002L && \
    defined(__cpp_concepts) && __cpp_concepts == 201907L
#undef __cpp_concepts
#define __cpp_concepts 202002L
#define GPUCTK_FUZZ_RAISED_CPP_CONCEPTS 1
#endif
