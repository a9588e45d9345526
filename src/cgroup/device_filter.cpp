#include "cgroup/device_filter.hpp"

#include <algorithm>
#include <cstddef>
#include <iterator>

#include "util/strings.hpp"

namespace gpuctk::cgroup {

namespace {

// The kernel's dev_t has 12 bits of major and 20 of minor (MINORBITS): the context holds no larger number.
constexpr uint32_t k_major_limit = 1U << 12;
constexpr uint32_t k_minor_limit = 1U << 20;

// The eBPF registers the filter uses (R1: the context, read-only for us).
constexpr uint8_t r0 = 0;
constexpr uint8_t r1 = 1;
constexpr uint8_t r_type = 2;
constexpr uint8_t r_access = 3;
constexpr uint8_t r_major = 4;
constexpr uint8_t r_minor = 5;
constexpr uint8_t k_max_register = 10;  // R10, the frame pointer; R11 is the kernel's scratch register

constexpr bpf_insn insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn i{};
  i.code = code;
  i.dst_reg = dst & 0xf;
  i.src_reg = src & 0xf;
  i.off = off;
  i.imm = imm;
  return i;
}

// dst = *(u32*)(R1 + offset)
constexpr bpf_insn load_context_u32(uint8_t dst, size_t offset) {
  return insn(BPF_LDX | BPF_W | BPF_MEM, dst, r1, static_cast<int16_t>(offset), 0);
}
constexpr bpf_insn alu64_imm(uint8_t op, uint8_t dst, int32_t imm) {
  return insn(BPF_ALU64 | op | BPF_K, dst, 0, 0, imm);
}
// if (dst <op> imm) goto pc + 1 + off
constexpr bpf_insn jump_imm(uint8_t op, uint8_t dst, int32_t imm, int16_t off) {
  return insn(BPF_JMP | op | BPF_K, dst, 0, off, imm);
}
constexpr bpf_insn exit_insn() {
  return insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
}

constexpr bpf_insn k_prologue[] = {
    load_context_u32(r_type, offsetof(bpf_cgroup_dev_ctx, access_type)),
    alu64_imm(BPF_AND, r_type, 0xffff),
    load_context_u32(r_access, offsetof(bpf_cgroup_dev_ctx, access_type)),
    alu64_imm(BPF_RSH, r_access, 16),
    load_context_u32(r_major, offsetof(bpf_cgroup_dev_ctx, major)),
    load_context_u32(r_minor, offsetof(bpf_cgroup_dev_ctx, minor)),
};
constexpr size_t k_rule_insns = 6;

// The BPF_DEVCG_ACC_* bits of an access string already checked by check_rule.
int32_t access_bits(std::string_view access) {
  int32_t bits = 0;
  for (const char c : access) {
    bits |= c == 'r' ? BPF_DEVCG_ACC_READ : c == 'w' ? BPF_DEVCG_ACC_WRITE : BPF_DEVCG_ACC_MKNOD;
  }
  return bits;
}

void append_rule(std::vector<bpf_insn>& out, const DeviceRule& rule) {
  const int32_t type = rule.type == 'c' ? BPF_DEVCG_DEV_CHAR : BPF_DEVCG_DEV_BLOCK;
  // A mismatch at instruction k of the block jumps to the next block, k_rule_insns - 1 - k ahead.
  const auto to_next_block = [](size_t k) { return static_cast<int16_t>(k_rule_insns - 1 - k); };
  out.push_back(jump_imm(BPF_JNE, r_type, type, to_next_block(0)));
  // Any requested bit outside the rule's (~bits, sign-extended: every other bit, unknown ones included).
  out.push_back(jump_imm(BPF_JSET, r_access, ~access_bits(rule.access), to_next_block(1)));
  out.push_back(jump_imm(BPF_JNE, r_major, static_cast<int32_t>(rule.major), to_next_block(2)));
  out.push_back(jump_imm(BPF_JNE, r_minor, static_cast<int32_t>(rule.minor), to_next_block(3)));
  out.push_back(alu64_imm(BPF_MOV, r0, 1));
  out.push_back(exit_insn());
}

// Why `old` cannot be copied behind the new rules, or "" when it can.
std::string refusal(std::span<const bpf_insn> old) {
  bool all_zero = true;
  for (const bpf_insn& i : old) {
    all_zero = all_zero && i.code == 0 && i.dst_reg == 0 && i.src_reg == 0 && i.off == 0 && i.imm == 0;
  }
  if (all_zero) {
    return "the dumped instructions are all zero (the kernel hides them under JIT constant blinding or "
           "kptr_restrict)";
  }
  for (size_t n = 0; n < old.size(); ++n) {
    const bpf_insn& i = old[n];
    const auto where = [n] { return "instruction " + std::to_string(n) + ": "; };
    const uint8_t cls = BPF_CLASS(i.code);
    if (i.dst_reg > k_max_register || i.src_reg > k_max_register) {
      return where() + "register R" + std::to_string(std::max(i.dst_reg, i.src_reg)) +
             " (the kernel's own, inserted by JIT constant blinding)";
    }
    if (cls == BPF_LD && BPF_MODE(i.code) == BPF_IMM && BPF_SIZE(i.code) == BPF_DW) {
      return where() + "BPF_LD_IMM64 (a map or pointer reference, valid only in the original)";
    }
    if (cls == BPF_LD) {
      return where() + "legacy packet load (BPF_LD)";
    }
    if ((cls == BPF_JMP || cls == BPF_JMP32) && BPF_OP(i.code) == BPF_CALL) {
      if (i.src_reg == 0 && i.imm == BPF_FUNC_tail_call) {
        return where() + "tail call";
      }
      return where() + "BPF_CALL (a dump holds the kernel's call target, which does not load again)";
    }
  }
  if (old.back().code != (BPF_JMP | BPF_EXIT)) {
    return "the last instruction is not BPF_EXIT";
  }
  return {};
}

}  // namespace

Result<void> check_rule(const DeviceRule& rule) {
  const auto refuse = [&](std::string_view why) {
    // Quoted: the rule comes from a container's request, and a message stays one line.
    return fail("device rule " + quote(rule_text(rule)) + ": " + std::string(why));
  };
  if (rule.type != 'c' && rule.type != 'b') {
    return refuse("type must be c or b");
  }
  if (rule.access.empty()) {
    return refuse("access is empty");
  }
  if (rule.access.find_first_not_of("rwm") != std::string::npos) {
    return refuse("access may hold only r, w and m");
  }
  if (rule.major >= k_major_limit) {
    return refuse("major above 4095 (no device has one)");
  }
  if (rule.minor >= k_minor_limit) {
    return refuse("minor above 1048575 (no device has one)");
  }
  return {};
}

std::string rule_text(const DeviceRule& rule) {
  std::string text(1, rule.type);
  text.append(" ").append(std::to_string(rule.major)).append(":").append(std::to_string(rule.minor));
  return text.append(" ").append(rule.access);
}

Result<std::vector<bpf_insn>> widen_program(std::span<const DeviceRule> rules,
                                            std::span<const bpf_insn> old) {
  for (const DeviceRule& rule : rules) {
    GPUCTK_TRY(check_rule(rule));
  }
  if (!old.empty()) {
    if (std::string why = refusal(old); !why.empty()) {
      return fail(std::move(why));
    }
  }
  const size_t tail = old.empty() ? 2 : old.size();
  const size_t total = std::size(k_prologue) + (rules.size() * k_rule_insns) + tail;
  if (rules.size() > k_max_program_insns || total > k_max_program_insns) {
    return fail("the program would have more than " + std::to_string(k_max_program_insns) + " instructions");
  }
  std::vector<bpf_insn> program;
  program.reserve(total);
  program.insert(program.end(), std::begin(k_prologue), std::end(k_prologue));
  for (const DeviceRule& rule : rules) {
    append_rule(program, rule);
  }
  if (old.empty()) {
    program.push_back(alu64_imm(BPF_MOV, r0, 0));
    program.push_back(exit_insn());
  } else {
    program.insert(program.end(), old.begin(), old.end());
  }
  return program;
}

}  // namespace gpuctk::cgroup
