//===- DivisionTrap.h - Integer division that does not trap -----*- C++ -*-===//
//
// GPUs return a value for an integer division by zero and for MIN / -1;
// x86 traps (SIGFPE). Metal source divides with `/` and `%` directly, and
// code such as `select(0, a / b, b != 0)` computes the division it then
// discards, so on the host the trap must not end the kernel. While a thread
// runs MSL kernel code, a SIGFPE raised by a `div`/`idiv` instruction is
// completed here instead: the instruction's results are set to the values
// Enigma's other backends give (NVIDIA's: a zero divisor gives every bit
// set for quotient and remainder, MIN / -1 gives MIN with remainder 0) and
// the kernel continues after it. Other signals, and divisions elsewhere,
// go to the handler installed before (the fault guard). x86-64 Linux only;
// elsewhere integer division does not trap.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_METALHOST_DIVISIONTRAP_H
#define ENIGMA_LIB_RUNTIME_METALHOST_DIVISIONTRAP_H

namespace enigma::metalhost {

/// Installs the SIGFPE handler (once) in front of the fault guard's, which
/// must be installed first.
void installDivisionTrapHandler();

/// Marks the calling thread as running MSL kernel code (or not).
void setRunningKernelCode(bool running);

} // namespace enigma::metalhost

#endif
