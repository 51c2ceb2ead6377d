//===- ChildProcess.h - Compilers that do not outlive their use -*- C++ -*-===//
//
// Runs a program (a host compiler) and collects its output. The program
// runs in a process group of its own and is killed:
// - when the process that started it dies, however it dies
//   (PR_SET_PDEATHSIG, so a killed Python does not leave g++ running);
// - when interruptRequested() (Ctrl-C, process exit) says so while it runs;
//   the call then throws Interrupted.
// Programs the compiler starts itself (g++'s cc1plus, as, ld) are in its
// process group: an interrupt kills them too; on the parent's death they
// finish the one step they are in and exit.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_CPU_CHILDPROCESS_H
#define ENIGMA_LIB_RUNTIME_CPU_CHILDPROCESS_H

#include <string>
#include <vector>

namespace enigma::cpu {

struct ProcessResult {
  bool started = false;
  int exitCode = -1;  // -1: killed by a signal
  std::string output; // stdout and stderr, interleaved; why it did not
                      // start when !started
};

/// Runs argv[0] (looked up in PATH when it has no '/') with argv, the
/// process's environment and /dev/null as input, and waits for it.
ProcessResult runChildProcess(const std::vector<std::string> &argv);

} // namespace enigma::cpu

#endif
