// RUN: not enigma-translate --enigma-to-msl %s 2>&1 | FileCheck %s

// A lane chosen at run time has no vector-family spelling (the builder only
// creates constant lanes); the emitter must refuse it, not print nonsense.

// CHECK: only a constant lane of a 1-D vector can be printed
enigma.kernel @dynamic_lane(%x: f32 {enigma.name = "x"}, %n: i32 {enigma.name = "n"}, %o: memref<?xf32> {enigma.name = "o"}) {
  %v = vector.broadcast %x : f32 to vector<4xf32>
  %i = arith.index_cast %n : i32 to index
  %e = vector.extract %v[%i] : f32 from vector<4xf32>
  %c0 = arith.constant 0 : index
  memref.store %e, %o[%c0] : memref<?xf32>
  enigma.return
}
