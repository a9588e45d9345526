#include "cgroup/device_filter.hpp"

#include <gtest/gtest.h>
#include <linux/bpf.h>

#include <cstring>
#include <optional>
#include <vector>

namespace gpuctk::cgroup {
namespace {

constexpr bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst & 0xf;
  i.src_reg = src & 0xf;
  i.off = off;
  i.imm = imm;
  return i;
}

bool same(const bpf_insn& a, const bpf_insn& b) {
  return std::memcmp(&a, &b, sizeof(a)) == 0;
}

const bpf_insn k_exit = insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
const bpf_insn k_r0_is_0 = insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0);

// A runtime-like old program: allow c 1:9 read only, deny everything else. It reads the context from R1
// itself, so it proves that the prologue left R1 alone.
std::vector<bpf_insn> old_program() {
  return {
      insn(BPF_LDX | BPF_W | BPF_MEM, 6, 1, 4, 0),  // r6 = major
      insn(BPF_LDX | BPF_W | BPF_MEM, 7, 1, 8, 0),  // r7 = minor
      insn(BPF_LDX | BPF_W | BPF_MEM, 8, 1, 0, 0),  // r8 = access_type
      insn(BPF_JMP | BPF_JNE | BPF_K, 6, 0, 3, 1),  // major != 1 -> deny
      insn(BPF_JMP | BPF_JNE | BPF_K, 7, 0, 2, 9),  // minor != 9 -> deny
      insn(BPF_JMP | BPF_JNE | BPF_K, 8, 0, 1, (BPF_DEVCG_ACC_READ << 16) | BPF_DEVCG_DEV_CHAR),
      insn(BPF_JMP | BPF_JA, 0, 0, 2, 0),  // -> allow
      k_r0_is_0,
      k_exit,
      insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1),  // allow
      k_exit,
  };
}

// Runs `program` on one access the way the kernel would, for the few instructions these programs use.
// Nothing when it meets anything else or runs off the end.
std::optional<int64_t> run(const std::vector<bpf_insn>& program, char type, uint32_t access, uint32_t major,
                           uint32_t minor) {
  bpf_cgroup_dev_ctx ctx{};
  ctx.access_type = (access << 16) | (type == 'c' ? BPF_DEVCG_DEV_CHAR : BPF_DEVCG_DEV_BLOCK);
  ctx.major = major;
  ctx.minor = minor;
  uint64_t reg[11] = {};
  for (size_t pc = 0; pc < program.size(); ++pc) {
    const bpf_insn& i = program[pc];
    const auto imm = static_cast<uint64_t>(static_cast<int64_t>(i.imm));
    bool jump = false;
    switch (i.code) {
      case BPF_LDX | BPF_W | BPF_MEM: {
        if (i.src_reg != 1) {
          return std::nullopt;  // only the context is memory here
        }
        uint32_t value = 0;
        std::memcpy(&value, reinterpret_cast<const char*>(&ctx) + i.off, sizeof(value));
        reg[i.dst_reg] = value;
        break;
      }
      case BPF_ALU64 | BPF_AND | BPF_K:
        reg[i.dst_reg] &= imm;
        break;
      case BPF_ALU64 | BPF_RSH | BPF_K:
        reg[i.dst_reg] >>= i.imm;
        break;
      case BPF_ALU64 | BPF_MOV | BPF_K:
        reg[i.dst_reg] = imm;
        break;
      case BPF_JMP | BPF_JNE | BPF_K:
        jump = reg[i.dst_reg] != imm;
        break;
      case BPF_JMP | BPF_JSET | BPF_K:
        jump = (reg[i.dst_reg] & imm) != 0;
        break;
      case BPF_JMP | BPF_JA:
        jump = true;
        break;
      case BPF_JMP | BPF_EXIT:
        return static_cast<int64_t>(reg[0]);
      default:
        return std::nullopt;
    }
    if (jump) {
      pc += i.off;
    }
  }
  return std::nullopt;
}

constexpr uint32_t r = BPF_DEVCG_ACC_READ;
constexpr uint32_t w = BPF_DEVCG_ACC_WRITE;
constexpr uint32_t m = BPF_DEVCG_ACC_MKNOD;

TEST(DeviceFilter, PrologueAndRuleBlockAreExact) {
  const DeviceRule rules[] = {{'c', 195, 255, "rw"}};
  const auto program = widen_program(rules, {});
  ASSERT_TRUE(program) << program.error().message;
  const std::vector<bpf_insn> expected = {
      insn(BPF_LDX | BPF_W | BPF_MEM, 2, 1, 0, 0),  // r2 = access_type
      insn(BPF_ALU64 | BPF_AND | BPF_K, 2, 0, 0, 0xffff),
      insn(BPF_LDX | BPF_W | BPF_MEM, 3, 1, 0, 0),  // r3 = access_type
      insn(BPF_ALU64 | BPF_RSH | BPF_K, 3, 0, 0, 16),
      insn(BPF_LDX | BPF_W | BPF_MEM, 4, 1, 4, 0),                   // r4 = major
      insn(BPF_LDX | BPF_W | BPF_MEM, 5, 1, 8, 0),                   // r5 = minor
      insn(BPF_JMP | BPF_JNE | BPF_K, 2, 0, 5, BPF_DEVCG_DEV_CHAR),  // -> the next rule (here the tail)
      insn(BPF_JMP | BPF_JSET | BPF_K, 3, 0, 4, ~static_cast<int32_t>(r | w)),
      insn(BPF_JMP | BPF_JNE | BPF_K, 4, 0, 3, 195),
      insn(BPF_JMP | BPF_JNE | BPF_K, 5, 0, 2, 255),
      insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1),
      k_exit,
      k_r0_is_0,
      k_exit,
  };
  ASSERT_EQ(program->size(), expected.size());
  for (size_t n = 0; n < expected.size(); ++n) {
    EXPECT_TRUE(same((*program)[n], expected[n])) << "instruction " << n;
  }
}

TEST(DeviceFilter, NewInstructionsNeverWriteR1AndOldOnesComeLastUnchanged) {
  const DeviceRule rules[] = {{'c', 1, 3, "rw"}, {'b', 8, 0, "m"}, {'c', 195, 0, "rwm"}};
  const std::vector<bpf_insn> old = old_program();
  const auto program = widen_program(rules, old);
  ASSERT_TRUE(program) << program.error().message;
  ASSERT_EQ(program->size(), 6 + (3 * 6) + old.size());
  const size_t added = program->size() - old.size();
  for (size_t n = 0; n < added; ++n) {
    EXPECT_NE((*program)[n].dst_reg, 1) << "instruction " << n;
  }
  for (size_t n = 0; n < old.size(); ++n) {
    EXPECT_TRUE(same((*program)[added + n], old[n])) << "old instruction " << n;
  }
}

TEST(DeviceFilter, AllowsTheRulesThenDecidesAsTheOldProgram) {
  const DeviceRule rules[] = {{'c', 1, 3, "rw"}, {'b', 8, 0, "m"}};
  const std::vector<bpf_insn> old = old_program();
  const auto program = widen_program(rules, old);
  ASSERT_TRUE(program) << program.error().message;
  EXPECT_EQ(run(*program, 'c', r, 1, 3), 1);
  EXPECT_EQ(run(*program, 'c', w, 1, 3), 1);
  EXPECT_EQ(run(*program, 'c', r | w, 1, 3), 1);
  EXPECT_EQ(run(*program, 'c', m, 1, 3), 0);  // not in the rule's access
  EXPECT_EQ(run(*program, 'b', r, 1, 3), 0);  // the wrong type
  EXPECT_EQ(run(*program, 'c', r, 1, 4), 0);
  EXPECT_EQ(run(*program, 'c', r, 2, 3), 0);
  EXPECT_EQ(run(*program, 'b', m, 8, 0), 1);
  EXPECT_EQ(run(*program, 'b', r | m, 8, 0), 0);
  // The old program's own rule still holds, and only it.
  EXPECT_EQ(run(*program, 'c', r, 1, 9), 1);
  EXPECT_EQ(run(*program, 'c', w, 1, 9), 0);
  EXPECT_EQ(run(old, 'c', r, 1, 3), 0);
}

TEST(DeviceFilter, EmptyOldProgramGivesAnAllowListThatDeniesTheRest) {
  const DeviceRule rules[] = {{'c', 1, 5, "rwm"}};
  const auto program = widen_program(rules, {});
  ASSERT_TRUE(program) << program.error().message;
  EXPECT_EQ(run(*program, 'c', r | w | m, 1, 5), 1);
  EXPECT_EQ(run(*program, 'c', r, 1, 3), 0);
  const auto deny_all = widen_program({}, {});
  ASSERT_TRUE(deny_all) << deny_all.error().message;
  EXPECT_EQ(run(*deny_all, 'c', r, 1, 5), 0);
}

std::string refusal(std::vector<bpf_insn> old) {
  const DeviceRule rules[] = {{'c', 1, 3, "rw"}};
  auto program = widen_program(rules, old);
  return program ? "accepted" : program.error().message;
}

TEST(DeviceFilter, RefusesOldProgramsItCannotCopy) {
  EXPECT_EQ(refusal(std::vector<bpf_insn>(5)),
            "the dumped instructions are all zero (the kernel hides them under JIT constant blinding or "
            "kptr_restrict)");
  EXPECT_EQ(refusal({insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_prandom_u32), k_r0_is_0, k_exit}),
            "instruction 0: BPF_CALL (a dump holds the kernel's call target, which does not load again)");
  EXPECT_EQ(refusal({k_r0_is_0, insn(BPF_JMP | BPF_CALL, 0, 1, 0, 2), k_exit}),
            "instruction 1: BPF_CALL (a dump holds the kernel's call target, which does not load again)");
  EXPECT_EQ(refusal({k_r0_is_0, insn(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_tail_call), k_exit}),
            "instruction 1: tail call");
  EXPECT_EQ(refusal({insn(BPF_LD | BPF_DW | BPF_IMM, 2, 1, 0, 7), insn(0, 0, 0, 0, 0), k_r0_is_0, k_exit}),
            "instruction 0: BPF_LD_IMM64 (a map or pointer reference, valid only in the original)");
  EXPECT_EQ(refusal({insn(BPF_LD | BPF_W | BPF_ABS, 0, 0, 0, 0), k_exit}),
            "instruction 0: legacy packet load (BPF_LD)");
  EXPECT_EQ(refusal({insn(BPF_ALU64 | BPF_MOV | BPF_K, 11, 0, 0, 5), k_r0_is_0, k_exit}),
            "instruction 0: register R11 (the kernel's own, inserted by JIT constant blinding)");
  EXPECT_EQ(refusal({k_r0_is_0}), "the last instruction is not BPF_EXIT");
  EXPECT_EQ(refusal({k_exit, insn(BPF_JMP | BPF_JA, 0, 0, -2, 0)}), "the last instruction is not BPF_EXIT");
  EXPECT_EQ(refusal(old_program()), "accepted");
}

TEST(DeviceFilter, RefusesInvalidRules) {
  const auto refused = [](DeviceRule rule) {
    const DeviceRule rules[] = {std::move(rule)};
    auto program = widen_program(rules, {});
    return program ? "accepted" : program.error().message;
  };
  EXPECT_EQ(refused({'a', 1, 3, "rw"}), "device rule \"a 1:3 rw\": type must be c or b");
  EXPECT_EQ(refused({'c', 1, 3, ""}), "device rule \"c 1:3 \": access is empty");
  EXPECT_EQ(refused({'c', 1, 3, "rx"}), "device rule \"c 1:3 rx\": access may hold only r, w and m");
  EXPECT_EQ(refused({'c', 1, 3, "r\nw"}), "device rule \"c 1:3 r\\nw\": access may hold only r, w and m");
  EXPECT_EQ(refused({'c', 4096, 3, "rw"}),
            "device rule \"c 4096:3 rw\": major above 4095 (no device has one)");
  EXPECT_EQ(refused({'b', 1, 1U << 20, "rw"}),
            "device rule \"b 1:1048576 rw\": minor above 1048575 (no device has one)");
  EXPECT_EQ(refused({'b', 4095, (1U << 20) - 1, "mrw"}), "accepted");
  EXPECT_EQ(rule_text({'c', 195, 255, "rw"}), "c 195:255 rw");
}

}  // namespace
}  // namespace gpuctk::cgroup
