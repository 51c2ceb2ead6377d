// RUN: enigma-opt %s -split-input-file -verify-diagnostics

// A kernel's name becomes the C identifier enigma_kernel_<name> in every
// target, so it must be an identifier itself (as a Python function's name
// is; the C++ builder and MLIR text allow any string).

// expected-error @+1 {{kernel name 'a-b' is not an identifier: it names the function enigma_kernel_<name> in MSL, CUDA and C++, so it may hold only letters, digits and '_' and must not start with a digit}}
enigma.kernel @"a-b"() {
  enigma.return
}

// -----

// expected-error @+1 {{kernel name '1k' is not an identifier}}
enigma.kernel @"1k"() {
  enigma.return
}

// -----

// expected-error @+1 {{kernel name 'two words' is not an identifier}}
enigma.kernel @"two words"() {
  enigma.return
}

// -----

// Keywords are fine: the prefix makes them enigma_kernel_asm; so are
// letters outside ASCII, which Python identifiers may hold.
enigma.kernel @asm() {
  enigma.return
}
enigma.kernel @"caf\C3\A9"() {
  enigma.return
}
