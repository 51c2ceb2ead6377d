// RUN: enigma-opt %s -split-input-file -verify-diagnostics

// enigma.truncf_sat converts to an 8-bit float of the operand's shape.

enigma.kernel @to_half(%x: f32 {enigma.name = "x"}) {
  // expected-error @+1 {{result #0 must be 8-bit float (scalar, vector or fragment)}}
  %a = enigma.truncf_sat %x : f32 to f16
  enigma.return
}

// -----

enigma.kernel @shapes(%v: vector<4xf32> {enigma.name = "v"}) {
  // expected-error @+1 {{must have the same shape}}
  %a = enigma.truncf_sat %v : vector<4xf32> to vector<2xf8E4M3FN>
  enigma.return
}
