//===- HostMemory.cpp - Buffers and arguments of the host runtimes --------===//
#include "HostMemory.h"

namespace enigma::cpu {

void checkHostLaunch(const KernelArtifact &artifact,
                     const std::vector<LaunchArg> &args, Dim3 grid,
                     Dim3 threads) {
  if (args.size() != artifact.params.size())
    throw RuntimeFailure("kernel " + artifact.kernelName + " has " +
                         std::to_string(artifact.params.size()) +
                         " parameters but was launched with " +
                         std::to_string(args.size()) + " arguments");
  if (grid.volume() == 0 || threads.volume() == 0)
    throw RuntimeFailure("kernel " + artifact.kernelName +
                         " launched with an empty grid or threadgroup");
}

} // namespace enigma::cpu
