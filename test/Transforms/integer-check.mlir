// RUN: enigma-opt %s --enigma-integer-check | FileCheck %s
// RUN: enigma-opt %s --enigma-integer-check --enigma-optimize | enigma-translate --enigma-to-cpp | FileCheck %s --check-prefix=CPP
// RUN: enigma-opt %s --enigma-integer-check --enigma-optimize | enigma-translate --enigma-to-msl -o %t.metal && %check_msl %t.metal

// Bounds-checked mode: each integer op the front end marked with its
// type's signedness is followed by a test of its operands; the first one
// whose exact result does not fit is written to the record with both
// operands. The op itself still wraps. Unmarked ops are not checked.

// CHECK-LABEL: enigma.kernel @k(
// CHECK-SAME: memref<?xi32, #enigma.address_space<device>> {enigma.bounds_record, enigma.dtype = "u32", enigma.name = "enigma_bounds_record"}
// CHECK-SAME: enigma.bounds_sites = [
// CHECK-SAME: {access = "sub", buffer = "u32", extent = 1 : i32, kind = "arithmetic", location = "k.py:2", param = -1 : i32, size = 0 : i64}
// CHECK-SAME: {access = "add", buffer = "i32", extent = 1 : i32, kind = "arithmetic", location = "k.py:3", param = -1 : i32, size = 0 : i64}
// CHECK-SAME: {access = "mul", buffer = "u64", extent = 1 : i32, kind = "arithmetic", location = "k.py:4", param = -1 : i32, size = 0 : i64}
// CHECK-SAME: {access = "neg", buffer = "i16", extent = 1 : i32, kind = "arithmetic", location = "k.py:5", param = -1 : i32, size = 0 : i64}
// CHECK-SAME: {access = "sub", buffer = "u32", extent = 1 : i32, kind = "arithmetic", location = "k.py:7", param = -1 : i32, size = 0 : i64}
// CHECK-SAME: enigma.checked_integers

// Unsigned subtraction: below zero when a < b.
// CHECK: %[[D:.*]] = arith.subi %[[X:.*]], %[[TWO:.*]] : i32
// CHECK-NOT: enigma.overflow_check
// CHECK: %[[BELOW:.*]] = arith.cmpi ult, %[[X]], %[[TWO]] : i32
// CHECK: scf.if %[[BELOW]] {
// CHECK:   enigma.atomic_rmw or %enigma_bounds_record
// CHECK:   enigma.atomic_rmw add %enigma_bounds_record[%{{.*}}], %{{.*}} relaxed
// CHECK:   arith.extui %[[X]] : i32 to i64
// CHECK:   arith.extui %[[TWO]] : i32 to i64
// CHECK: } {enigma.check}
// Signed addition: the sign of the result differs from both operands'.
// CHECK: %[[S:.*]] = arith.addi %[[P:.*]], %[[Q:.*]] : i32
// CHECK-DAG: arith.xori %[[P]], %[[S]]
// CHECK-DAG: arith.xori %[[Q]], %[[S]]
// CHECK: arith.cmpi slt
// CHECK: scf.if
// CHECK:   arith.extsi %[[P]] : i32 to i64
// CHECK: } {enigma.check}
// 64-bit unsigned product: divided back on a divisor that cannot be zero.
// CHECK: %[[M:.*]] = arith.muli
// CHECK: arith.select
// CHECK: arith.divui %[[M]]
// CHECK: scf.if
// CHECK: } {enigma.check}
// Negation of an i16: only the operand is recorded.
// CHECK: arith.subi %{{.*}}, %[[N:.*]] : i16
// CHECK: scf.if
// CHECK:   arith.extsi %[[N]] : i16 to i64
// CHECK-NOT: arith.extsi
// CHECK: } {enigma.check}
// An unmarked op: not checked.
// CHECK: arith.addi %{{.*}} : i32
// CHECK-NOT: scf.if
// CHECK: %[[G:.*]] = arith.subi %{{.*}}, %{{.*}} : i32
// A difference only one arm of a select uses: checked after the select,
// where that arm is taken.
// CHECK: %[[SEL:.*]] = arith.select %[[C:.*]], %{{.*}}, %{{.*}} : f32
// CHECK: %[[UNDER:.*]] = arith.cmpi ult
// CHECK: %[[TAKEN:.*]] = arith.andi %[[UNDER]], %[[C]] : i1
// CHECK: scf.if %[[TAKEN]] {

// CPP: atomic_fetch_or_explicit(
// CPP: enigma_bounds_record_

enigma.kernel @k(%A: memref<?xf32, #enigma.address_space<device>> {enigma.dtype = "f32", enigma.name = "A"},
                 %O: memref<?xi64, #enigma.address_space<device>> {enigma.dtype = "u64", enigma.name = "O"},
                 %s: i32 {enigma.dtype = "i32", enigma.name = "s"},
                 %w: i64 {enigma.dtype = "u64", enigma.name = "w"},
                 %h: i16 {enigma.dtype = "i16", enigma.name = "h"}) {
  %x = enigma.thread_position_in_grid <x>
  %c2 = arith.constant 2 : i32
  %d = arith.subi %x, %c2 {enigma.overflow_check = "unsigned"} : i32 loc("k.py":2:0)
  %sum = arith.addi %s, %x {enigma.overflow_check = "signed"} : i32 loc("k.py":3:0)
  %wx = arith.extui %sum : i32 to i64
  %prod = arith.muli %w, %wx {enigma.overflow_check = "unsigned"} : i64 loc("k.py":4:0)
  %z = arith.constant 0 : i16
  %neg = arith.subi %z, %h {enigma.overflow_check = "signed negation"} : i16 loc("k.py":5:0)
  %plain = arith.addi %d, %x : i32 loc("k.py":6:0)
  %c1 = arith.constant 1 : i32
  %prev = arith.subi %x, %c1 {enigma.overflow_check = "unsigned"} : i32 loc("k.py":7:0)
  %i = arith.index_castui %prev : i32 to index
  %v = memref.load %A[%i] : memref<?xf32, #enigma.address_space<device>>
  %c0 = arith.constant 0 : i32
  %pos = arith.cmpi ugt, %x, %c0 : i32
  %zero = arith.constant 0.0 : f32
  %sel = arith.select %pos, %v, %zero : f32
  %j = arith.index_castui %x : i32 to index
  memref.store %sel, %A[%j] : memref<?xf32, #enigma.address_space<device>>
  %k = arith.index_castui %plain : i32 to index
  %p64 = arith.addi %prod, %wx : i64
  %n64 = arith.extsi %neg : i16 to i64
  %t64 = arith.addi %p64, %n64 : i64
  memref.store %t64, %O[%k] : memref<?xi64, #enigma.address_space<device>>
  enigma.return
}
