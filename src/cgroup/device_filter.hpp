#pragma once
// The eBPF device filter of cgroup v2: a BPF_PROG_TYPE_CGROUP_DEVICE program runs on every open or mknod
// of a device node by a process of the cgroup it is attached to, reads struct bpf_cgroup_dev_ctx from R1
// (access_type = access << 16 | type, major, minor) and allows the access when it returns 1.
//
// widen_program builds a program that allows some devices first and otherwise decides as an existing
// program does, from that program's instructions as the kernel dumps them. Pure: no system calls.

#include <linux/bpf.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "util/error.hpp"

namespace gpuctk::cgroup {

// One device a container must be able to use. type 'c' or 'b'; access a non-empty subset of "rwm".
struct DeviceRule {
  char type;
  uint32_t major;
  uint32_t minor;
  std::string access;
};

// Ok when `rule` is one the kernel can match: type 'c' or 'b', access made only of 'r', 'w', 'm' and not
// empty, major < 4096 and minor < 2^20 (the kernel's dev_t; a larger number matches no device). Errors
// quote the rule: "device rule \"c 1:3 rx\": access may hold only r, w and m".
Result<void> check_rule(const DeviceRule& rule);

// "c 1:3 rw": the rule as cgroup v1's devices.allow reads it (meaningful for a rule check_rule accepts).
std::string rule_text(const DeviceRule& rule);

// The most instructions the kernel loads for a privileged loader (BPF_COMPLEXITY_LIMIT_INSNS).
inline constexpr size_t k_max_program_insns = 1'000'000;

// A program that allows `rules`, then runs `old` unchanged:
//   1. a prologue loads type (low 16 bits of access_type) into R2, access (high 16 bits) into R3, major
//      into R4 and minor into R5. R1 is never written: `old` reads the context from it. R2-R5 are free
//      because the verifier accepted `old` only if it writes a register before reading it;
//   2. per rule: type equal, requested access bits a subset of the rule's, major equal, minor equal ->
//      R0 = 1, exit; any mismatch jumps to the next rule;
//   3. `old`, as it was: its jumps are relative to themselves, so prepending keeps them valid.
// With `old` empty the tail is "R0 = 0; exit": a program that allows exactly `rules`, as a runtime's
// allow-list does.
// Refused (an error, nothing built), because a copy of such a program would not behave as the original
// or would not load: a dump whose instructions are all zero (the kernel hides them under JIT constant
// blinding or kptr_restrict), a helper or function call (BPF_CALL; tail calls are calls too), a 64-bit
// immediate load (BPF_LD_IMM64: map and pointer references) or other BPF_LD, a register above R10 (the
// blinding scratch register), a last instruction that is not BPF_EXIT; and invalid rules (check_rule),
// or a result longer than k_max_program_insns. Errors name the instruction: "instruction 4: BPF_CALL (a
// dump holds the kernel's call target, which does not load again)".
Result<std::vector<bpf_insn>> widen_program(std::span<const DeviceRule> rules, std::span<const bpf_insn> old);

}  // namespace gpuctk::cgroup
