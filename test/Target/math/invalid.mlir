// RUN: enigma-opt %s -split-input-file -verify-diagnostics

enigma.kernel @signed_float(%x: f32 {enigma.name = "x"}) {
  // expected-error @+1 {{'signed' applies to integer operands only}}
  %0 = enigma.clamp signed %x, %x, %x : f32
  enigma.return
}

// -----

enigma.kernel @field_too_wide(%x: i8 {enigma.name = "x"}) {
  %o = arith.constant 6 : i32
  %n = arith.constant 4 : i32
  // expected-error @+1 {{field [6, 10) does not fit in 8 bits}}
  %0 = enigma.extract_bits %x, %o, %n : i8
  enigma.return
}

// -----

enigma.kernel @offset_beyond(%x: i16 {enigma.name = "x"}, %n: i32 {enigma.name = "n"}) {
  %o = arith.constant 17 : i32
  // expected-error @+1 {{offset 17 is beyond the 16-bit width}}
  %0 = enigma.insert_bits %x, %x, %o, %n : i16
  enigma.return
}

// -----

enigma.kernel @predicate_lanes(%x: vector<4xf32> {enigma.name = "x"}) {
  // expected-error @+1 {{one bool per operand lane}}
  %0 = enigma.isnan %x : vector<4xf32> -> vector<2xi1>
  enigma.return
}

// -----

enigma.kernel @int_fract(%x: i32 {enigma.name = "x"}) {
  // expected-error @+1 {{must be floating-point-like}}
  %0 = enigma.fract %x : i32
  enigma.return
}

// -----

enigma.kernel @unpack_srgb_of_float(%x: f32 {enigma.name = "x"}) {
  // expected-error @+1 {{operand #0 must be 32-bit signless integer}}
  %0 = "enigma.unpack_unorm4x8_srgb"(%x) : (f32) -> vector<4xf32>
  enigma.return
}
