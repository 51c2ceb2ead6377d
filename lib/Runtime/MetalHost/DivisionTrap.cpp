//===- DivisionTrap.cpp ---------------------------------------------------===//
#include "DivisionTrap.h"

#include <csignal>
#include <cstdint>
#include <cstring>
#include <mutex>

#if defined(__x86_64__) && defined(__linux__)
#include <ucontext.h>
#define ENIGMA_EMULATE_DIVISION 1
#endif

namespace enigma::metalhost {
namespace {

// Read by the signal handler: initial-exec, so reading it never allocates.
thread_local bool runningKernelCode __attribute__((tls_model("initial-exec"))) =
    false;
struct sigaction previousAction;

#if ENIGMA_EMULATE_DIVISION
/// The ucontext register holding x86 register number `n` (ModRM order:
/// rax rcx rdx rbx rsp rbp rsi rdi r8..r15).
greg_t &reg(mcontext_t &m, int n) {
  static const int slots[16] = {REG_RAX, REG_RCX, REG_RDX, REG_RBX,
                                REG_RSP, REG_RBP, REG_RSI, REG_RDI,
                                REG_R8,  REG_R9,  REG_R10, REG_R11,
                                REG_R12, REG_R13, REG_R14, REG_R15};
  return m.gregs[slots[n]];
}

uint64_t mask(int width) {
  return width == 64 ? ~uint64_t(0) : (uint64_t(1) << width) - 1;
}

/// Completes the `div`/`idiv` at the instruction pointer; false when the
/// instruction is something else.
bool completeDivision(mcontext_t &m) {
  const auto *ip = reinterpret_cast<const uint8_t *>(m.gregs[REG_RIP]);
  size_t i = 0;
  bool operand16 = false;
  for (;; ++i) { // legacy prefixes
    uint8_t b = ip[i];
    if (b == 0x66)
      operand16 = true;
    else if (!(b == 0xf2 || b == 0xf3 || b == 0x2e || b == 0x3e ||
               b == 0x26 || b == 0x64 || b == 0x65 || b == 0x36 || b == 0x67))
      break;
  }
  uint8_t rex = 0;
  if ((ip[i] & 0xf0) == 0x40)
    rex = ip[i++];
  const uint8_t opcode = ip[i++];
  if (opcode != 0xf6 && opcode != 0xf7)
    return false;
  const uint8_t modrm = ip[i++];
  const int mod = modrm >> 6, kind = (modrm >> 3) & 7, rm = modrm & 7;
  if (kind != 6 && kind != 7) // 6: div, 7: idiv
    return false;
  const bool isSigned = kind == 7;
  const int width = opcode == 0xf6 ? 8 : (rex & 8) ? 64 : operand16 ? 16 : 32;

  uint64_t divisor;
  if (mod == 3) {
    int n = rm | (rex & 1) << 3;
    if (width == 8 && !rex && n >= 4) // ah ch dh bh
      divisor = uint64_t(reg(m, n - 4)) >> 8;
    else
      divisor = uint64_t(reg(m, n));
  } else {
    int64_t address = 0;
    bool ripRelative = false;
    int base = rm;
    if (rm == 4) { // SIB
      const uint8_t sib = ip[i++];
      const int scale = sib >> 6;
      const int index = ((sib >> 3) & 7) | (rex & 2) << 2;
      base = sib & 7;
      if (index != 4)
        address += int64_t(reg(m, index)) << scale;
      if (base == 5 && mod == 0)
        base = -1; // disp32, no base
    } else if (rm == 5 && mod == 0) {
      ripRelative = true;
      base = -1;
    }
    if (base >= 0)
      address += int64_t(reg(m, base | (rex & 1) << 3));
    int32_t displacement = 0;
    if (mod == 1) {
      displacement = int8_t(ip[i++]);
    } else if (mod == 2 || base == -1) {
      std::memcpy(&displacement, ip + i, 4);
      i += 4;
    }
    address += displacement;
    if (ripRelative)
      address += int64_t(m.gregs[REG_RIP]) + int64_t(i);
    divisor = 0;
    std::memcpy(&divisor, reinterpret_cast<const void *>(address),
                size_t(width / 8));
  }
  divisor &= mask(width);

  uint64_t quotient, remainder;
  if (divisor == 0) { // every bit set, remainder the dividend (RISC-V's)
    quotient = mask(width);
    remainder = uint64_t(reg(m, 0)) & mask(width);
  } else if (isSigned && divisor == mask(width)) {
    // MIN / -1 (compilers sign-extend the dividend): MIN, remainder 0.
    quotient = uint64_t(reg(m, 0)) & mask(width);
    remainder = 0;
  } else {
    return false; // an unsigned quotient that does not fit: not from C
  }
  greg_t &rax = reg(m, 0), &rdx = reg(m, 2);
  switch (width) {
  case 8:
    rax = greg_t((uint64_t(rax) & ~uint64_t(0xffff)) | remainder << 8 |
                 quotient);
    break;
  case 16:
    rax = greg_t((uint64_t(rax) & ~uint64_t(0xffff)) | quotient);
    rdx = greg_t((uint64_t(rdx) & ~uint64_t(0xffff)) | remainder);
    break;
  default: // 32-bit results are zero-extended, as the instruction does
    rax = greg_t(quotient);
    rdx = greg_t(remainder);
    break;
  }
  m.gregs[REG_RIP] += greg_t(i);
  return true;
}
#endif

void onArithmeticFault(int signal, siginfo_t *info, void *context) {
#if ENIGMA_EMULATE_DIVISION
  if (runningKernelCode && info &&
      (info->si_code == FPE_INTDIV || info->si_code == FPE_INTOVF) &&
      completeDivision(static_cast<ucontext_t *>(context)->uc_mcontext))
    return;
#endif
  // Not ours: the handler installed before (the fault guard) decides.
  if (previousAction.sa_flags & SA_SIGINFO) {
    previousAction.sa_sigaction(signal, info, context);
  } else if (previousAction.sa_handler != SIG_IGN &&
             previousAction.sa_handler != SIG_DFL) {
    previousAction.sa_handler(signal);
  } else {
    ::signal(signal, SIG_DFL); // the fault happens again, unhandled
  }
}
} // namespace

void installDivisionTrapHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction ours {};
    ours.sa_sigaction = onArithmeticFault;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    ::sigaction(SIGFPE, &ours, &previousAction);
  });
}

void setRunningKernelCode(bool running) { runningKernelCode = running; }

} // namespace enigma::metalhost
